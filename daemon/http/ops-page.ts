// The operations page itself: one HTML document (no CDN, no build step) whose script reads /ops/api/syncs, renders
// it with the DOM API (never innerHTML: contact ids and reasons come from outside) and refreshes; charts in ops-charts.ts.
import { CHARTS_SCRIPT } from './ops-charts.ts';

/** Seconds between refreshes of the page's data. */
export const REFRESH_SECONDS = 3;

/**
 * The page, with `nonce` on its one style and its scripts (the Content-Security-Policy allows nothing else);
 * `chartCss` is the charting library's stylesheet, inlined under the same nonce.
 */
export function opsPage(nonce: string, chartCss: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Campaign sync: operations</title>
<style nonce="${nonce}">
  :root { font: 14px/1.4 system-ui, sans-serif; color: #1d232b; background: #f5f6f8; }
  body { margin: 0 auto; max-width: 1280px; padding: 16px 24px 48px; }
  header { display: flex; align-items: baseline; gap: 16px; flex-wrap: wrap; }
  h1 { font-size: 20px; margin: 0; }
  h2 { font-size: 16px; margin: 0 0 8px; }
  h3 { font-size: 13px; margin: 16px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: #56606d; }
  a { color: #1f5fbf; }
  .muted { color: #6b7480; }
  .banner { margin: 12px 0; padding: 8px 12px; border-radius: 4px; background: #fde8e8; color: #8a1c1c; }
  .banner[hidden] { display: none; }
  section.sync { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 14px 16px; margin: 16px 0; }
  dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(130px, 1fr)); gap: 6px 16px; margin: 0; }
  dl.facts div { display: flex; flex-direction: column; }
  dl.facts dt { font-size: 12px; color: #6b7480; }
  dl.facts dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; }
  table { border-collapse: collapse; width: 100%; font-size: 13px; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eceff2; vertical-align: top; }
  th { font-weight: 600; color: #56606d; white-space: nowrap; }
  td.n { text-align: right; font-variant-numeric: tabular-nums; }
  td.error, td.reason, p.reason { color: #8a1c1c; word-break: break-word; }
  .status-done { color: #1b7a3a; } .status-failed { color: #b3261e; font-weight: 600; } .status-running { color: #a15c00; }
  button { font: inherit; padding: 5px 12px; border: 1px solid #1f5fbf; border-radius: 4px; background: #1f5fbf; color: #fff; cursor: pointer; }
  button:disabled { background: #c8ced6; border-color: #c8ced6; cursor: default; }
  .actions { display: flex; align-items: center; gap: 12px; margin-top: 8px; }
  .views { display: inline-flex; gap: 0; }
  .views button { background: #fff; color: #1f5fbf; border-radius: 0; }
  .views button:first-child { border-radius: 4px 0 0 4px; } .views button:last-child { border-radius: 0 4px 4px 0; }
  .views button[aria-pressed="true"] { background: #1f5fbf; color: #fff; }
  .charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 8px 24px; }
  @media (max-width: 760px) { .charts { grid-template-columns: minmax(0, 1fr); } }
  figure.chart { margin: 0; min-width: 0; }
  figure.chart figcaption { font-size: 12px; font-weight: 600; color: #56606d; margin-bottom: 2px; }
  .uplot .u-legend { font-size: 12px; }
  p.note { font-size: 12px; color: #6b7480; margin: 4px 0 0; }
  section.lookup { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 14px 16px; margin: 16px 0 0; }
  .lookup-form { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; }
  .lookup-form input, .lookup-form select { font: inherit; padding: 4px 8px; border: 1px solid #c8ced6; border-radius: 4px; }
  .lookup-form input { min-width: 16em; }
  .lookup-result { margin-top: 10px; }
  .lookup-result h3 { margin-top: 10px; text-transform: none; letter-spacing: 0; font-size: 14px; color: #1d232b; }
  #lookup-message:empty { display: none; }
  #lookup-message { margin: 8px 0 0; color: #8a1c1c; }
${chartCss}
</style>
</head>
<body>
<header>
  <h1>Campaign sync: operations</h1>
  <a id="queues-link" href="queues/">Queues (bull-board)</a>
  <span class="muted">updated <span id="updated">never</span>, every ${REFRESH_SECONDS} s</span>
  <span id="view-switch"></span>
</header>
<div id="problem" class="banner" role="alert" hidden></div>
<section class="lookup" aria-labelledby="lookup-title">
  <h2 id="lookup-title">Look up a phone number</h2>
  <div class="lookup-form">
    <input id="lookup-phone" type="search" autocomplete="off" spellcheck="false" maxlength="40" aria-label="Phone number"
      placeholder="+1 212 555 0199, (212) 555-0199, 0044 20 7946 0018">
    <select id="lookup-sync" aria-label="Sync"><option value="">every sync</option></select>
    <button type="button" id="lookup-go">Look up</button>
    <span class="muted">numbers without a country code take the sync's mapping.defaultCountry</span>
  </div>
  <p id="lookup-message" role="alert"></p>
  <div id="lookup-result" class="lookup-result"></div>
</section>
<main id="syncs"><p class="muted">Loading…</p></main>
<script nonce="${nonce}">
(() => {
  'use strict';
  // Relative to wherever the page is served (a proxy may add a path prefix): /ops and /ops/ both work.
  const base = location.pathname.endsWith('/') ? location.pathname : location.pathname + '/';
  // Every request and link starts from the origin alone: opened as http://user:token@host/ops, the page's own URL
  // carries the credentials, and fetch refuses a URL that does (the browser keeps them for the origin anyway).
  const origin = location.origin;
  const NONCE = document.currentScript.nonce;
  document.getElementById('queues-link').href = origin + base + 'queues/';
  const notes = new Map(); // sync id → the last retry's outcome, kept across refreshes

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = String(v);
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  const dash = '\\u2014';
  const show = (v) => (v === null || v === undefined || v === '' ? dash : String(v));
  const when = (iso) => (iso ? String(iso).replace('T', ' ').replace(/\\.\\d+Z$/, 'Z') : dash);
  function span(ms) {
    if (ms === null || ms === undefined || !Number.isFinite(Number(ms))) return dash;
    const s = Number(ms) / 1000;
    if (s < 1) return Math.round(Number(ms)) + ' ms';
    if (s < 120) return s.toFixed(1) + ' s';
    if (s < 7200) return (s / 60).toFixed(1) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }
  function fact(label, value, field) {
    return el('div', {}, el('dt', { text: label }), el('dd', { text: value, 'data-field': field }));
  }

  const LAG_NOTE = '\u2020 Mirror lag: how far the oldest call the last mirror run wrote was behind the newest call in the dialer\u2019s report ' +
    '(both on the dialer\u2019s clock), plus the time from that read to the last write (on the daemon\u2019s clock). No clock is compared ' +
    'with the other, so a dialer clock ahead of or behind the daemon\u2019s does not hide the lag.';
${CHARTS_SCRIPT}
  document.getElementById('view-switch').replaceWith(viewSwitch());

  const RUN_COUNTS = ['seen', 'changed', 'left', 'invalid', 'planned', 'pushed', 'deleted', 'rejected'];

  // A trace id as a link to the configured trace viewer (telemetry.viewerUrl), or as text without one.
  let traceViewer = null;
  function traceLink(traceId, text) {
    if (!traceViewer) return el('code', { title: traceId, text });
    return el('a', { href: traceViewer.split('{traceId}').join(traceId), target: '_blank', rel: 'noopener noreferrer', title: traceId, text });
  }
  function traceCell(traceId) {
    if (!traceId) return el('td', { text: dash, 'data-field': 'trace' });
    return el('td', { 'data-field': 'trace' }, traceLink(traceId, traceId.slice(0, 8) + '\u2026'));
  }

  function runsTable(runs) {
    if (!runs.length) return el('p', { class: 'muted', text: 'No runs yet.' });
    const head = el('tr', {}, ...['Run', 'Trigger', 'Mode', 'Status', 'Started', 'Duration', ...RUN_COUNTS, 'Error', 'Trace'].map((h) => el('th', { text: h })));
    const rows = runs.map((r) => el('tr', { 'data-run': r.id, 'data-status': r.status },
      el('td', { text: r.id }), el('td', { text: show(r.trigger) }), el('td', { text: r.mode }),
      el('td', { class: 'status-' + r.status, text: r.status, 'data-field': 'status' }),
      el('td', { text: when(r.startedAt) }), el('td', { class: 'n', text: span(r.durationMs) }),
      ...RUN_COUNTS.map((c) => el('td', { class: 'n', text: show(r[c]), 'data-field': c })),
      el('td', { class: 'error', text: r.error || '' }), traceCell(r.traceId)));
    return el('table', { class: 'runs' }, el('thead', {}, head), el('tbody', {}, ...rows));
  }

  function parkedTable(s) {
    if (!s.parkedRecords.length) return el('p', { class: 'muted', text: 'No parked records.' });
    const head = el('tr', {}, ...['Phone number', 'Contact', 'Reason', 'Code', 'Parked at', 'Trace'].map((h) => el('th', { text: h })));
    const rows = s.parkedRecords.map((p) => el('tr', { 'data-parked': '' },
      el('td', { text: p.phone }), el('td', { text: show(p.contactId), 'data-field': 'contact' }),
      el('td', { class: 'reason', text: p.reason, 'data-field': 'reason' }), el('td', { text: p.code, 'data-field': 'code' }),
      el('td', { text: when(p.at) }), traceCell(p.traceId)));
    const more = s.parked > s.parkedRecords.length ? el('p', { class: 'muted', text: 'Showing ' + s.parkedRecords.length + ' of ' + s.parked + '.' }) : null;
    return el('div', {}, el('table', { class: 'parked' }, el('thead', {}, head), el('tbody', {}, ...rows)), more);
  }

  // Contacts the last runs refused before sending anything of them: nothing of theirs is parked, so this is where the
  // reason (a number that cannot be dialed, a variable over the API's limit) shows.
  function recordErrorsTable(s) {
    if (!s.recordErrors.length) return el('p', { class: 'muted', text: 'No record errors in these runs.' });
    const head = el('tr', {}, ...['Run', 'Contact', 'Line', 'Field', 'Value', 'Reason', 'Code'].map((h) => el('th', { text: h })));
    const rows = s.recordErrors.map((e) => el('tr', { 'data-record-error': '' },
      el('td', { text: e.run }), el('td', { text: show(e.contactId || null), 'data-field': 'contact' }), el('td', { class: 'n', text: show(e.line) }),
      el('td', { text: e.field, 'data-field': 'field' }), el('td', { text: e.value }),
      el('td', { class: 'reason', text: e.reason, 'data-field': 'reason' }), el('td', { text: e.code, 'data-field': 'code' })));
    const shown = s.runs.reduce((n, r) => n + r.invalid, 0);
    const more = shown > s.recordErrors.length ? el('p', { class: 'muted', text: 'Showing ' + s.recordErrors.length + ' of ' + shown + '.' }) : null;
    return el('div', {}, el('table', { class: 'record-errors' }, el('thead', {}, head), el('tbody', {}, ...rows)), more);
  }

  async function retry(id, button) {
    button.disabled = true;
    try {
      // The custom header is the CSRF guard: a cross-site page cannot send it without a CORS preflight, which fails.
      const res = await fetch(origin + base + 'api/syncs/' + encodeURIComponent(id) + '/retry', {
        method: 'POST', headers: { 'X-Requested-With': 'campaign-sync' }, credentials: 'same-origin',
      });
      const body = await res.json().catch(() => ({}));
      notes.set(id, res.ok ? 'Re-queued ' + body.requeued + ' parked record(s); they are pushed again by the run just queued.' +
        (body.activities ? ' ' + body.activities + ' parked activit' + (body.activities === 1 ? 'y is' : 'ies are') + ' written again by the mirror run just queued.' : '')
        : 'Retry refused (' + res.status + '): ' + (body.error || res.statusText));
    } catch (err) {
      notes.set(id, 'Retry failed: ' + err.message);
    }
    if (loading) await loading; // started before the retry: its data may predate it
    await load();
  }

  // The calling window: what the daemon set, when that changes, what it holds back, and the compliance report.
  function windowSection(w, title) {
    const h = w.holdings;
    return el('div', { class: 'window' },
      el('h3', { text: title || 'Calling window' }),
      el('dl', { class: 'facts' },
        fact('Campaign', w.state || dash, 'windowState'), fact('Next edge', w.nextEdgeAt ? when(w.nextEdgeAt) : 'none within 15 days', 'windowNext'),
        fact('Held by the window', w.heldByWindow, 'heldByWindow'), fact('Held by a cap', w.heldByCap, 'heldByCap'),
        fact('Calls inside their window', w.callsInside, 'callsInside'), fact('Calls outside (must be 0)', w.callsOutside, 'callsOutside'),
        fact('Numbers not added by the daemon', h.foreign + (h.unjudged ? ' (' + h.unjudged + ' with no zone)' : ''), 'foreignNumbers'),
        fact('Holdings judged', h.judgedAt ? when(h.judgedAt) + (h.current ? '' : ' (not current)') : 'not yet', 'holdingsJudged')),
      w.heldClosedBecause ? el('p', { class: 'note', 'data-field': 'heldClosedBecause', text: 'Held Paused: ' + w.heldClosedBecause }) : null,
      w.capHeldBy ? el('p', { class: 'muted', 'data-field': 'capHeldBy', text: 'Caps are held ' + w.capHeldBy }) : null,
      el('p', { class: 'muted', 'data-field': 'windowGroups', text: 'Window groups: ' + (w.groups.length ? w.groups.join('; ') : 'none yet') +
        (h.groups.length ? '; of numbers not added by the daemon: ' + h.groups.join('; ') : '') }),
      h.numbers.length ? el('ul', { class: 'muted', 'data-field': 'foreignList' }, ...h.numbers.map((n) => el('li', { text: n.phone + ': ' + n.evidence }))) : null);
  }

  // A routed sync's campaign: its zones, what it holds, and its own calling window.
  function routeSection(r) {
    return el('div', { class: 'route', 'data-route': r.campaignId },
      el('dl', { class: 'facts' },
        fact('Contacts held', r.contacts, 'contacts'), fact('Numbers held', r.numbers, 'numbers'), fact('Dirty', r.dirty, 'dirty'),
        fact('Open batches', r.openBatches, 'openBatches'), fact('Parked', r.parked, 'parked'), fact('Waiting for the window', r.waitingForWindow, 'waitingForWindow'),
        fact('Held by Do Not Call', r.doNotCall, 'doNotCall'), fact('In the campaign, not this sync\u2019s', r.notThisSyncs, 'notThisSyncs')),
      r.window ? windowSection(r.window, 'Campaign ' + r.campaignId + ' (' + r.states.concat(r.zones).join(', ') + ')') : null);
  }

  // The Do Not Call lists holding the sync: each copy's age (or why it cannot vouch) and the numbers each keeps out.
  function listsSection(dl) {
    return el('div', { 'data-field': 'doNotCallLists' },
      el('h3', { text: 'Do Not Call lists' + (dl.off ? ' (no registry or state list: ' + dl.off + ')' : '') }),
      el('dl', { class: 'facts' }, ...dl.lists.map((l) => fact(l.type === 'company' ? 'The company\u2019s list (' + l.numbers + ' numbers)' : l.list,
        (l.type === 'company' ? '' : l.cannotVouch ? 'CANNOT VOUCH: ' + l.cannotVouch + '; ' : 'copy of ' + l.date + ', ' + l.ageDays + ' days old (' + l.maxAgeDays + ' at most); ') + 'keeps out ' + l.keptOut,
        'dncList-' + l.list)),
      dl.waiting ? fact('Waiting for a list that can vouch', dl.waiting, 'dncWaiting') : null));
  }

  // A refused sync (its checks found what would make a rule fail open): it adds no numbers until each problem is fixed.
  function refusedSection(r) {
    return el('div', { class: 'note', 'data-field': 'refused' },
      el('p', { text: 'REFUSED since ' + when(r.at) + ': this sync adds no numbers until this is fixed (checked again every 5 minutes, at a start and by sync <id>)' }),
      el('ul', {}, ...r.problems.map((p) => el('li', { text: p.message + (p.fix ? ' \u2014 fix: ' + p.fix : '') }))));
  }

  function syncSection(s) {
    const m = s.mirror;
    const button = el('button', { type: 'button', 'data-action': 'retry', text: 'Retry parked records', disabled: s.parked === 0 && !(m && m.parked) });
    button.addEventListener('click', () => retry(s.sync, button));
    return el('section', { class: 'sync', 'data-sync': s.sync },
      el('h2', {}, document.createTextNode(s.sync + ' '), el('span', { class: 'muted', text: '(' + s.source + ' \\u2192 ' +
        (s.routes ? s.routes.length + ' campaigns by zone: ' + s.routes.map((r) => r.campaignId).join(', ') : 'campaign ' + s.campaignId) + ')' })),
      s.refused ? refusedSection(s.refused) : null,
      el('dl', { class: 'facts' },
        fact('Contacts held', s.contacts, 'contacts'), fact('Numbers held', s.numbers, 'numbers'),
        fact('Inbox', s.inbox + (s.receiving ? ' (+' + s.receiving + ' arriving)' : ''), 'inbox'), fact('Dirty', s.dirty, 'dirty'),
        fact('Open batches', s.openBatches, 'openBatches'), fact('Parked', s.parked, 'parked'), fact('Waiting for the window', s.waitingForWindow, 'waitingForWindow'),
        fact('Held by Do Not Call', s.doNotCall, 'doNotCall'), fact('In the campaign, not this sync\u2019s', s.notThisSyncs, 'notThisSyncs'),
        s.compareEvery !== null ? fact('Last comparison', s.lastCompareAt ? when(s.lastCompareAt) : 'never', 'lastCompare') : null,
        fact('Mirror lag \u2020', m ? span(m.lagMs) : dash, 'mirrorLag'), fact(m && m.countsOnly ? 'Calls counted for caps' : 'Mirrored', m ? show(m.mirrored) : dash, 'mirrored'),
        fact('Mirror parked', m ? show(m.parked) : dash, 'mirrorParked'), fact('Last record', m ? when(m.lastRecordAt) : dash, 'mirrorLastRecord')),
      m ? el('p', { class: 'note', text: LAG_NOTE }) : null,
      el('p', { class: s.rules.on ? 'muted' : 'note', 'data-field': 'rules', text: 'Calling-window rules ' + s.rules.summary }),
      listsSection(s.doNotCallLists),
      s.window ? windowSection(s.window) : null,
      ...(s.routes || []).map(routeSection),
      el('h3', { text: 'History (runs shaded on the time axis)' }), chartsFor(s.sync),
      el('h3', { text: 'Last runs' }), runsTable(s.runs),
      el('h3', { text: 'Record errors' }), recordErrorsTable(s),
      el('h3', { text: 'Parked records' }), parkedTable(s),
      el('div', { class: 'actions' }, button, el('span', { class: 'muted', 'data-field': 'note', text: notes.get(s.sync) || '' })));
  }

  // One phone number as each sync knows it (GET api/numbers/<as typed>): outside #syncs, so a refresh keeps it.
  const STATES = {
    held: 'held: the campaign has it', parked: 'parked: the dialer refused it', sending: 'being sent (an open batch)',
    planned: 'planned (an open batch, not sent yet)', dirty: 'waiting to be planned (or for the calling window)',
    'do-not-call': 'held out: a contact holding it is marked Do Not Call', elsewhere: 'held for another sync of the campaign',
    wanted: 'wanted by a contact, not in the campaign (a calling-window cap, or a run to come)', unknown: 'not known to this sync',
  };
  function numberSection(n) {
    const b = n.batch, p = n.parked, w = n.window;
    return el('div', { 'data-lookup-sync': n.sync },
      el('h3', { text: n.sync + ' (campaign ' + n.campaignId + ')' }),
      el('dl', { class: 'facts' },
        fact('Phone number', n.phone, 'phone'), fact('State', n.state, 'state'),
        fact('Contact', show(n.contactId), 'contact'), fact('Number id', show(n.numberId), 'numberId'),
        fact('Held by sync', show(n.heldBy), 'heldBy'),
        fact('Batch', b ? b.id + ' (' + show(b.kind) + (b.sending ? ', being sent' : '') + ')' : dash, 'batch'),
        fact('Parked', p ? p.code + ' at ' + when(p.at) : dash, 'parkedAt'),
        fact('Do Not Call holders', n.doNotCall, 'doNotCall'),
        el('div', {}, el('dt', { text: 'Trace' + (n.traceOf ? ' (of the ' + n.traceOf + ')' : '') }),
          el('dd', { 'data-field': 'trace' }, n.traceId ? traceLink(n.traceId, n.traceId) : dash))),
      el('p', { class: 'muted', 'data-field': 'stateText', text: STATES[n.state] || n.state }),
      p ? el('p', { class: 'reason', 'data-field': 'reason', text: 'Parked: ' + p.reason }) : null,
      n.keptBecause ? el('p', { class: 'muted', 'data-field': 'kept', text: 'Kept: ' + n.keptBecause }) : null,
      n.contactIds.length > 1 ? el('p', { class: 'muted', 'data-field': 'contacts', text: 'Contacts holding it: ' + n.contactIds.join(', ') }) : null,
      w === undefined ? null : el('p', { 'data-field': 'window', text: w
        ? 'Calling window: ' + (w.open ? 'open' : 'closed') + (w.open && w.closesAt ? ', closes ' + when(w.closesAt) : '') +
          (!w.open && w.opensAt ? ', opens ' + when(w.opensAt) : '') + '. Evidence: ' + w.evidence
        : 'Calling window: no evidence (the window has not admitted this number)' }));
  }
  let lookupSeq = 0;
  async function lookUp() {
    const typed = document.getElementById('lookup-phone').value.trim();
    const sync = document.getElementById('lookup-sync').value;
    const message = document.getElementById('lookup-message');
    const result = document.getElementById('lookup-result');
    const seq = ++lookupSeq;
    if (!typed) { message.textContent = 'Type a phone number first.'; result.replaceChildren(); return; }
    message.textContent = '';
    try {
      const res = await fetch(origin + base + 'api/numbers/' + encodeURIComponent(typed) + (sync ? '?sync=' + encodeURIComponent(sync) : ''),
        { credentials: 'same-origin', cache: 'no-store' });
      const body = await res.json().catch(() => ({}));
      if (seq !== lookupSeq) return; // a newer lookup was asked for meanwhile
      if (!res.ok) { message.textContent = body.error || 'The daemon answered ' + res.status + '.'; result.replaceChildren(); return; }
      result.replaceChildren(...body.syncs.map(numberSection),
        ...body.refused.map((r) => el('p', { class: 'muted', text: r.sync + ': not a phone number there (' + r.reason + ')' })));
    } catch (err) {
      if (seq === lookupSeq) message.textContent = 'Could not look it up: ' + err.message;
    }
  }
  document.getElementById('lookup-go').addEventListener('click', lookUp);
  document.getElementById('lookup-phone').addEventListener('keydown', (e) => { if (e.key === 'Enter') lookUp(); });
  function syncOptions(ids) {
    const select = document.getElementById('lookup-sync');
    const have = [...select.options].slice(1).map((o) => o.value);
    if (have.join('\\n') === ids.join('\\n')) return;
    const chosen = select.value;
    select.replaceChildren(el('option', { value: '', text: 'every sync' }), ...ids.map((id) => el('option', { value: id, text: id })));
    select.value = ids.includes(chosen) ? chosen : '';
  }

  let loading = null;
  async function load() {
    // One request at a time: a slow answer must not be overwritten by an older one.
    if (loading) return loading;
    loading = (async () => {
      const problem = document.getElementById('problem');
      try {
        const res = await fetch(origin + base + 'api/syncs', { credentials: 'same-origin', cache: 'no-store' });
        if (!res.ok) throw new Error('the daemon answered ' + res.status);
        const data = await res.json();
        traceViewer = data.traceViewer || null;
        syncOptions(data.syncs.map((s) => s.sync));
        document.getElementById('syncs').replaceChildren(...data.syncs.map(syncSection));
        await refreshCharts(data.syncs.map((s) => s.sync));
        document.getElementById('updated').textContent = when(data.generatedAt);
        problem.hidden = true;
      } catch (err) {
        problem.textContent = 'Could not refresh: ' + err.message;
        problem.hidden = false;
      }
    })();
    try { await loading; } finally { loading = null; }
  }
  load();
  setInterval(load, ${REFRESH_SECONDS * 1000});
})();
</script>
</body>
</html>
`;
}
