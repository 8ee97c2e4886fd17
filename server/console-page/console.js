// The web console's script: renders accounts, campaigns, numbers, the call log, API keys, webhook endpoints and the
// clock from the console API (/console/…, and the v1 operations under /console/v1/…). Every rule and every refusal
// message is the server's: this script shows what the server answers and decides nothing itself.
'use strict';

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const main = document.getElementById('main');
const statusLine = document.getElementById('status');
const errorLine = document.getElementById('error');
const REFRESH_MS = 2000;
const PAGE = 50;
const NUMBER_STATUSES = ['NotContacted', 'Contacting', 'Blacklisted', 'Success', 'RetryPending', 'Failure'];
const ROLES = ['CampaignAdmin', 'CampaignReader', 'CampaignNumberAdmin', 'CampaignNumberProvider'];
const SETTABLE_STATES = [['Active', 'Activate'], ['Paused', 'Pause'], ['Canceled', 'Cancel']];

/** A refusal of the server: its problem detail is what the user reads. */
class Refusal extends Error {
  constructor(message, status, problem) {
    super(message);
    this.status = status;
    this.problem = problem;
  }
}

let sessionLost = false;

/** One request to the console API: JSON (or a FormData upload) out, JSON in; every change carries the CSRF token. */
async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  let payload;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  if (method !== 'GET') headers['x-csrf-token'] = CSRF;
  const res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
  const text = await res.text();
  let data;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const detail = (data && (data.detail || data.message)) || `The server answered ${res.status}`;
    if (res.status === 401) showSessionLost(detail);
    throw new Refusal(detail, res.status, data);
  }
  return { data, total: Number(res.headers.get('x-total-count') ?? Number.NaN) };
}

const enc = encodeURIComponent;
const accountPath = (a) => `/console/accounts/${enc(a)}`;
const v1Path = (a, c) => `/console/v1/accounts/${enc(a)}/campaigns/${enc(c)}`;
const listParams = (range, extra = {}) => {
  const q = new URLSearchParams({ range: JSON.stringify(range) });
  for (const [k, v] of Object.entries(extra)) q.set(k, JSON.stringify(v));
  return q.toString();
};

/** Builds an element: attributes (on: event handlers), then children (strings become text, never markup). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [event, fn] of Object.entries(v)) el.addEventListener(event, fn);
    else if (k === 'class') el.className = v;
    // As defaults, so that a form's reset returns to them.
    else if (k === 'checked') el.defaultChecked = el.checked = v;
    else if (k === 'value' && el instanceof HTMLTextAreaElement) el.defaultValue = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

function say(text) {
  statusLine.textContent = text;
  errorLine.hidden = true;
}

function fail(err) {
  if (sessionLost) return;
  errorLine.textContent = err instanceof Refusal ? err.message : `Something went wrong: ${err.message}`;
  errorLine.hidden = false;
}

function showSessionLost(detail) {
  sessionLost = true;
  errorLine.replaceChildren(`${detail} `, h('a', { href: '/console' }, 'Sign in again'));
  errorLine.hidden = false;
}

/** Runs a user's action: its button is disabled meanwhile, and a refusal is shown as the server worded it. */
async function act(button, fn) {
  if (button) button.disabled = true;
  try {
    await fn();
  } catch (err) {
    fail(err);
  } finally {
    if (button) button.disabled = false;
  }
}

/** A form whose submit runs `fn(form data)`; its submit button is disabled while it runs. */
function form(attrs, fields, submitLabel, fn) {
  const button = h('button', { type: 'submit' }, submitLabel);
  const f = h('form', attrs, ...fields, button);
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    void act(button, () => fn(new FormData(f), f));
  });
  return f;
}

let fieldIds = 0;
function field(label, input) {
  const id = input.id || `f${++fieldIds}`;
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input);
}

function select(name, options, value) {
  return h('select', { name }, options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)));
}

function table(caption, headers) {
  const tbody = h('tbody');
  const t = h('table', {}, h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))), tbody);
  return { wrap: h('div', { class: 'table-wrap', role: 'region', 'aria-label': caption, tabindex: 0 }, t), tbody };
}

/**
 * Rows kept by key: a refresh updates the cells of the rows it keeps, so a button the user is on keeps its focus
 * while the figures around it change.
 */
function keyedRows(tbody, key, build, empty) {
  const rows = new Map();
  return (items) => {
    tbody.querySelector('.empty')?.remove();
    const seen = new Set(items.map(key));
    for (const [k, row] of rows) if (!seen.has(k)) { row.tr.remove(); rows.delete(k); }
    // Rows already in place stay put: moving a row would take the focus off its buttons.
    let at = tbody.firstChild;
    for (const item of items) {
      const k = key(item);
      let row = rows.get(k);
      if (!row) rows.set(k, (row = build(item)));
      row.update(item);
      if (row.tr === at) at = at.nextSibling;
      else tbody.insertBefore(row.tr, at);
    }
    if (!items.length) tbody.append(h('tr', { class: 'empty' }, h('td', { colspan: 20 }, empty)));
  };
}

/** A table cell whose text a row's update sets. */
function cell() {
  const td = h('td');
  return { td, set: (text) => { if (td.textContent !== String(text)) td.textContent = String(text); } };
}

function secretBox(label, value) {
  const input = h('input', { type: 'text', readonly: true, value, class: 'secret', 'aria-label': label });
  const copy = h('button', {
    type: 'button',
    on: {
      click: () => act(copy, async () => {
        try {
          await navigator.clipboard.writeText(value);
        } catch {
          input.select();
          document.execCommand('copy');
        }
        say(`${label} copied to the clipboard.`);
      }),
    },
  }, 'Copy');
  return h('div', { class: 'once', role: 'group', 'aria-label': label },
    h('p', {}, h('strong', {}, `${label}: `), 'shown once, now. Copy it and keep it safe; the server keeps only a hash.'),
    h('div', { class: 'inline' }, input, copy));
}

const percent = (x) => (x === null || x === undefined ? '–' : `${(x * 100).toFixed(1)}%`);
const countsText = (counts) => {
  const parts = Object.entries(counts).filter(([, n]) => n > 0).map(([s, n]) => `${s} ${n}`);
  return parts.length ? parts.join(' · ') : 'none';
};

// ---- views --------------------------------------------------------------------------------------------------

/** The view on screen; its refresh runs on every tick of the poll. */
let view = { refresh: async () => {} };

function heading(text, crumbs = []) {
  const nav = crumbs.length
    ? h('nav', { 'aria-label': 'Breadcrumb', class: 'crumbs' }, h('ol', {}, crumbs.map(([label, href]) => h('li', {}, href ? h('a', { href }, label) : label))))
    : null;
  const h2 = h('h2', { tabindex: -1 }, text);
  // Only nodes: replaceChildren() would write a missing breadcrumb as the text "null".
  return nav ? [nav, h2] : [h2];
}

async function accountsView() {
  const { wrap, tbody } = table('Accounts', ['Name', 'Time zone', 'Id', 'Created']);
  const set = keyedRows(tbody, (a) => a.id, (a) => {
    const tz = cell();
    const tr = h('tr', {}, h('td', {}, h('a', { href: `#/accounts/${enc(a.id)}` }, a.name)), tz.td, h('td', { class: 'id' }, a.id), h('td', {}, a.createdAt));
    return { tr, update: (x) => tz.set(x.timezone) };
  }, 'No accounts yet: create one below.');
  const zones = h('datalist', { id: 'zones' }, (Intl.supportedValuesOf?.('timeZone') ?? []).map((z) => h('option', { value: z })));
  const create = form({ class: 'card', 'aria-labelledby': 'new-account' }, [
    h('h3', { id: 'new-account' }, 'New account'),
    field('Name', h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' })),
    field('Time zone', h('input', { name: 'timezone', value: 'UTC', list: 'zones', autocomplete: 'off' })),
    zones,
  ], 'Create account', async (fd, f) => {
    const { data } = await api('POST', '/console/accounts', { name: fd.get('name'), timezone: fd.get('timezone') || 'UTC' });
    f.reset();
    say(`Account "${data.name}" created.`);
    location.hash = `#/accounts/${enc(data.id)}`;
  });
  main.replaceChildren(...heading('Accounts'), h('section', { 'aria-label': 'Accounts' }, wrap), create);
  return { refresh: async () => set((await api('GET', '/console/accounts')).data) };
}

async function accountView(accountId) {
  const { data: account } = await api('GET', accountPath(accountId));
  const base = accountPath(accountId);

  // Campaigns, with live counters.
  const campaigns = table('Campaigns', ['Name', 'State', 'Type', 'Dialer', 'Numbers by status', 'Calls', 'Answer rate', 'Actions']);
  const setCampaigns = keyedRows(campaigns.tbody, (c) => c.id, (c) => {
    const [state, type, mode, counts, calls, rate] = [cell(), cell(), cell(), cell(), cell(), cell()];
    const link = h('a', { href: `#/accounts/${enc(accountId)}/campaigns/${enc(c.id)}` }, c.name);
    const actions = h('div', { class: 'buttons' }, campaignButtons(accountId, c, () => view.refresh()));
    const showState = stateButtons(actions);
    const tr = h('tr', {}, h('td', {}, link), state.td, type.td, mode.td, counts.td, calls.td, rate.td, h('td', {}, actions));
    return {
      tr,
      update: (x) => {
        link.textContent = x.name;
        state.set(x.state); type.set(x.type); mode.set(x.dialer.mode); showState(x.state);
        counts.set(countsText(x.counters.numbers)); calls.set(x.counters.calls); rate.set(percent(x.counters.answerRate));
      },
    };
  }, 'No campaigns yet: create one below.');
  const endpointChoice = h('select', { name: 'webhookEndpointId' }, h('option', { value: '' }, 'none'));
  const newCampaign = form({ class: 'card', 'aria-labelledby': 'new-campaign' }, [
    h('h3', { id: 'new-campaign' }, 'New campaign'),
    field('Name', h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' })),
    field('Type', select('type', [['Static', 'Static'], ['Dynamic', 'Dynamic']], 'Static')),
    field('Dialer mode', select('mode', [['Power', 'Power'], ['Predictive', 'Predictive']], 'Power')),
    field('Webhook endpoint', endpointChoice),
  ], 'Create campaign', async (fd, f) => {
    const body = { name: fd.get('name'), type: fd.get('type'), dialer: { mode: fd.get('mode') } };
    if (fd.get('webhookEndpointId')) body.webhookEndpointId = fd.get('webhookEndpointId');
    const { data } = await api('POST', `${base}/campaigns`, body);
    f.reset();
    say(`Campaign "${data.name}" created (${data.type}, ${data.state}).`);
    await view.refresh();
  });

  // API keys.
  const keys = table('API keys', ['Name', 'Roles', 'Token starts', 'Created', 'Expires', 'Status', 'Actions']);
  const keyOnce = h('div', { class: 'once-slot' });
  const setKeys = keyedRows(keys.tbody, (k) => k.id, (k) => {
    const status = cell();
    const revoke = h('button', {
      type: 'button', 'aria-label': `Revoke key ${k.name}`,
      on: {
        click: () => act(revoke, async () => {
          if (!confirm(`Revoke the API key "${k.name}"? Requests with its token will be refused (403) from now on.`)) return;
          await api('DELETE', `${base}/apiKeys/${enc(k.id)}`);
          say(`API key "${k.name}" revoked.`);
          await view.refresh();
        }),
      },
    }, 'Revoke');
    const tr = h('tr', {}, h('td', {}, k.name), h('td', {}, k.roles.join(', ')), h('td', { class: 'id' }, `${k.tokenPrefix}…`),
      h('td', {}, k.createdAt), h('td', {}, k.expiresAt ?? 'never'), status.td, h('td', {}, h('div', { class: 'buttons' }, revoke)));
    return {
      tr,
      update: (x) => {
        status.set(x.deletedAt ? `revoked ${x.deletedAt}` : 'active');
        revoke.hidden = Boolean(x.deletedAt);
      },
    };
  }, 'No API keys yet.');
  const newKey = form({ class: 'card', 'aria-labelledby': 'new-key' }, [
    h('h3', { id: 'new-key' }, 'New API key'),
    field('Name', h('input', { name: 'name', required: true, maxlength: 200, autocomplete: 'off' })),
    h('fieldset', {}, h('legend', {}, 'Roles'),
      ROLES.map((r) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'roles', value: r, checked: r === 'CampaignAdmin' }), r))),
  ], 'Create key', async (fd, f) => {
    const { data } = await api('POST', `${base}/apiKeys`, { name: fd.get('name'), roles: fd.getAll('roles') });
    f.reset();
    keyOnce.replaceChildren(secretBox(`API token of "${data.name}"`, data.token));
    say(`API key "${data.name}" created; copy its token now.`);
    await view.refresh();
    keyOnce.querySelector('input').focus();
  });

  // Webhook endpoints and their recent deliveries.
  const endpoints = table('Webhook endpoints', ['URL', 'Id', 'Created', 'Actions']);
  const secretOnce = h('div', { class: 'once-slot' });
  const deliveries = h('div', { class: 'deliveries' });
  let shownEndpoint = null;
  const setEndpoints = keyedRows(endpoints.tbody, (e) => e.id, (e) => {
    const show = h('button', { type: 'button', 'aria-label': `Deliveries to ${e.url}`, on: { click: () => act(show, async () => { shownEndpoint = e; await refreshDeliveries(); }) } }, 'Deliveries');
    const del = h('button', {
      type: 'button', 'aria-label': `Delete endpoint ${e.url}`,
      on: {
        click: () => act(del, async () => {
          if (!confirm(`Delete the webhook endpoint ${e.url}? Events waiting for it are dropped.`)) return;
          await api('DELETE', `${base}/webhookEndpoints/${enc(e.id)}`);
          if (shownEndpoint?.id === e.id) { shownEndpoint = null; deliveries.replaceChildren(); }
          say(`Webhook endpoint ${e.url} deleted.`);
          await view.refresh();
        }),
      },
    }, 'Delete');
    return { tr: h('tr', {}, h('td', {}, e.url), h('td', { class: 'id' }, e.id), h('td', {}, e.createdAt), h('td', {}, h('div', { class: 'buttons' }, show, del))), update: () => {} };
  }, 'No webhook endpoints yet.');
  const newEndpoint = form({ class: 'card', 'aria-labelledby': 'new-endpoint' }, [
    h('h3', { id: 'new-endpoint' }, 'New webhook endpoint'),
    field('URL', h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://example.com/hooks/dialer', autocomplete: 'off' })),
  ], 'Create endpoint', async (fd, f) => {
    const { data } = await api('POST', `${base}/webhookEndpoints`, { url: fd.get('url') });
    f.reset();
    secretOnce.replaceChildren(secretBox(`Signing secret of ${data.url}`, data.secret));
    say(`Webhook endpoint ${data.url} created; copy its signing secret now.`);
    await view.refresh();
  });
  const deliveryTable = table('Recent deliveries', ['Event', 'Type', 'Attempt', 'Sent at (real time)', 'Outcome', 'Detail']);
  async function refreshDeliveries() {
    if (!shownEndpoint) return;
    const { data } = await api('GET', `${base}/webhookEndpoints/${enc(shownEndpoint.id)}/deliveries`);
    deliveryTable.tbody.replaceChildren(...(data.attempts.length ? data.attempts.map((d) => h('tr', {},
      h('td', { class: 'id' }, d.eventId), h('td', {}, d.type), h('td', {}, d.attempt), h('td', {}, d.at), h('td', {}, d.outcome), h('td', {}, d.detail ?? '')))
      : [h('tr', {}, h('td', { colspan: 6 }, 'No delivery attempts yet.'))]));
    deliveries.replaceChildren(h('h3', {}, `Recent deliveries to ${shownEndpoint.url}`),
      h('p', {}, `${data.waiting} event${data.waiting === 1 ? '' : 's'} waiting to be sent.`), deliveryTable.wrap);
  }

  main.replaceChildren(
    ...heading(account.name, [['Accounts', '#/'], [account.name]]),
    h('p', { class: 'meta' }, `Account ${account.id} · ${account.timezone}`),
    h('section', { 'aria-labelledby': 'campaigns-title' }, h('h3', { id: 'campaigns-title' }, 'Campaigns'), campaigns.wrap, newCampaign),
    h('section', { 'aria-labelledby': 'keys-title' }, h('h3', { id: 'keys-title' }, 'API keys'), keys.wrap, keyOnce, newKey),
    h('section', { 'aria-labelledby': 'endpoints-title' }, h('h3', { id: 'endpoints-title' }, 'Webhook endpoints'), endpoints.wrap, secretOnce, deliveries, newEndpoint),
  );
  return {
    refresh: async () => {
      const [c, k, e] = await Promise.all([
        api('GET', `${base}/campaigns?${listParams([0, 999])}`), api('GET', `${base}/apiKeys`), api('GET', `${base}/webhookEndpoints`),
      ]);
      setCampaigns(c.data);
      setKeys(k.data);
      setEndpoints(e.data);
      const chosen = endpointChoice.value;
      endpointChoice.replaceChildren(h('option', { value: '' }, 'none'), ...e.data.map((x) => h('option', { value: x.id, selected: x.id === chosen }, x.url)));
      await refreshDeliveries();
    },
  };
}

/**
 * Hides the button of the state a campaign is in (asking for it again changes nothing); every other one stays, and
 * the server answers it: this page does not second-guess the transition rules.
 */
function stateButtons(container) {
  return (state) => {
    for (const b of container.querySelectorAll('button[data-state]')) b.hidden = b.dataset.state === state;
  };
}

/** The state and delete buttons of a campaign. */
function campaignButtons(accountId, c, after) {
  const buttons = SETTABLE_STATES.map(([state, label]) => {
    const b = h('button', {
      type: 'button', 'data-state': state, 'aria-label': `${label} ${c.name}`,
      on: {
        click: () => act(b, async () => {
          const { data } = await api('PUT', `${v1Path(accountId, c.id)}/state`, state);
          say(`Campaign "${data.name}" is ${data.state}.`);
          await after();
        }),
      },
    }, label);
    return b;
  });
  const del = h('button', {
    type: 'button', class: 'danger', 'aria-label': `Delete ${c.name}`,
    on: {
      click: () => act(del, async () => {
        if (!confirm(`Delete the campaign "${c.name}" with its numbers and reports?`)) return;
        await api('DELETE', v1Path(accountId, c.id));
        say(`Campaign "${c.name}" deleted.`);
        if (location.hash.includes('/campaigns/')) location.hash = `#/accounts/${enc(accountId)}`;
        else await after();
      }),
    },
  }, 'Delete');
  return [...buttons, del];
}

async function campaignView(accountId, campaignId) {
  const { data: account } = await api('GET', accountPath(accountId));
  const base = accountPath(accountId);
  const v1 = v1Path(accountId, campaignId);
  const find = async () => {
    const { data } = await api('GET', `${base}/campaigns?${listParams([0, 0], { filter: { id: campaignId } })}`);
    if (!data.length) throw new Refusal(`Campaign "${campaignId}" does not exist in this account (deleted?)`, 404);
    return data[0];
  };
  let campaign = await find();

  const summary = h('dl', { class: 'summary' });
  const stateGroup = h('div', { class: 'buttons', role: 'group', 'aria-label': 'Campaign state' }, campaignButtons(accountId, campaign, () => view.refresh()));
  const showState = stateButtons(stateGroup);
  const title = heading(campaign.name, [['Accounts', '#/'], [account.name, `#/accounts/${enc(accountId)}`], [campaign.name]]);
  const showSummary = (c) => {
    const items = [['State', c.state], ['Type', c.type], ['Dialer mode', c.dialer.mode], ['Numbers', c.numbersCount],
      ['By status', countsText(c.counters.numbers)], ['Calls made', c.counters.calls], ['Answered', c.counters.answered],
      ['Answer rate', percent(c.counters.answerRate)]];
    summary.replaceChildren(...items.flatMap(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': k }, String(v))]));
    showState(c.state);
  };
  showSummary(campaign);

  // Numbers: a page at a time, filtered by status and phone number.
  let first = 0;
  let filter = {};
  const numbers = table('Numbers', ['Select', 'Phone number', 'Status', 'Attempts', 'Id']);
  const selectAll = h('input', { type: 'checkbox', 'aria-label': 'Select every number on this page' });
  numbers.wrap.querySelector('thead th').replaceChildren(selectAll);
  selectAll.addEventListener('change', () => {
    for (const box of numbers.tbody.querySelectorAll('input[type=checkbox]')) box.checked = selectAll.checked;
  });
  const pageInfo = h('span', { class: 'page-info', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', on: { click: () => act(prev, async () => { first = Math.max(0, first - PAGE); await refreshNumbers(); }) } }, 'Previous page');
  const next = h('button', { type: 'button', on: { click: () => act(next, async () => { first += PAGE; await refreshNumbers(); }) } }, 'Next page');
  const deleteSelected = h('button', {
    type: 'button', class: 'danger',
    on: {
      click: () => act(deleteSelected, async () => {
        const ids = [...numbers.tbody.querySelectorAll('input[type=checkbox]:checked')].map((b) => b.value);
        if (!ids.length) throw new Refusal('Select the numbers to delete first.', 0);
        await api('DELETE', `${v1}/numbers`, ids);
        say(`${ids.length} number${ids.length === 1 ? '' : 's'} deleted.`);
        selectAll.checked = false;
        await view.refresh();
      }),
    },
  }, 'Delete selected');
  const setNumbers = keyedRows(numbers.tbody, (n) => n.id, (n) => {
    const [status, attempts] = [cell(), cell()];
    const box = h('input', { type: 'checkbox', value: n.id, 'aria-label': `Select ${n.number}` });
    return { tr: h('tr', {}, h('td', {}, box), h('td', {}, n.number), status.td, attempts.td, h('td', { class: 'id' }, n.id)), update: (x) => { status.set(x.status); attempts.set(x.attempts); } };
  }, 'No numbers match.');
  async function refreshNumbers() {
    const { data, total } = await api('GET', `${v1}/numbers?${listParams([first, first + PAGE - 1], Object.keys(filter).length ? { filter } : {})}`);
    if (!data.length && first > 0 && total > 0) {
      first = Math.max(0, Math.floor((total - 1) / PAGE) * PAGE);
      return refreshNumbers();
    }
    setNumbers(data);
    pageInfo.textContent = total ? `${first + 1}–${first + data.length} of ${total}` : '0 numbers';
    prev.disabled = first === 0;
    next.disabled = first + data.length >= total;
  }
  const filterForm = form({ class: 'inline-form', 'aria-label': 'Filter numbers' }, [
    field('Status', select('status', [['', 'any'], ...NUMBER_STATUSES.map((s) => [s, s])], '')),
    field('Phone number contains', h('input', { name: 'number', inputmode: 'tel', autocomplete: 'off' })),
  ], 'Filter', async (fd) => {
    filter = {};
    if (fd.get('status')) filter.status = fd.get('status');
    if (String(fd.get('number')).trim()) filter.number = String(fd.get('number')).trim();
    first = 0;
    await refreshNumbers();
  });

  const intakeResult = h('div', { class: 'intake', 'aria-live': 'polite' });
  const showIntake = (added, rejected) => {
    intakeResult.replaceChildren(h('p', {}, `${added} added, ${rejected.length} rejected.`),
      rejected.length ? h('ul', {}, rejected.slice(0, 50).map((r) => h('li', {}, `${r.number ?? r.value} (${r.line !== undefined ? `line ${r.line}` : `entry ${r.index}`}): ${r.reason}`))) : '');
  };
  const paste = form({ class: 'card', 'aria-labelledby': 'add-numbers' }, [
    h('h4', { id: 'add-numbers' }, 'Add numbers'),
    field('Phone numbers, one per line (or separated by commas)', h('textarea', { name: 'numbers', rows: 5, required: true, inputmode: 'tel' })),
  ], 'Add numbers', async (fd, f) => {
    const list = String(fd.get('numbers')).split(/[\n,;]+/).map((s) => s.trim()).filter(Boolean);
    if (!list.length) throw new Refusal('Paste at least one phone number.', 0);
    const { data } = await api('POST', `${base}/campaigns/${enc(campaignId)}/numbers`, list.map((number) => ({ number })));
    f.reset();
    showIntake(data.created.length, data.rejected);
    say(`${data.created.length} number${data.created.length === 1 ? '' : 's'} added.`);
    await view.refresh();
  });
  const upload = form({ class: 'card', 'aria-labelledby': 'upload-numbers' }, [
    h('h4', { id: 'upload-numbers' }, 'Upload a CSV file'),
    field('CSV file (phone number first, then variables)', h('input', { name: 'file', type: 'file', accept: '.csv,text/csv,text/plain', required: true })),
    h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'firstRowIsHeader', value: 'true' }), 'First row is a header'),
  ], 'Upload', async (fd, f) => {
    const body = new FormData();
    body.set('firstRowIsHeader', fd.get('firstRowIsHeader') ? 'true' : 'false');
    body.set('file', fd.get('file'));
    try {
      const { data } = await api('POST', `${base}/campaigns/${enc(campaignId)}/numbers/upload`, body);
      showIntake(data.createdCount, data.rejected);
      say(`${data.createdCount} number${data.createdCount === 1 ? '' : 's'} added from the file.`);
    } catch (err) {
      if (err.problem?.rejected) showIntake(0, err.problem.rejected);
      throw err;
    }
    f.reset();
    await view.refresh();
  });

  // The call log: the newest calls, refreshed on every tick.
  const calls = table('Call log', ['Started', 'Phone number', 'Attempt', 'Ring result', 'Answer', 'Outcome']);
  const callCount = h('p', { class: 'meta', 'aria-live': 'off' });
  const setCalls = keyedRows(calls.tbody, (c) => c.id, (c) => ({
    tr: h('tr', {}, h('td', {}, c.startedAtLocal), h('td', {}, c.number), h('td', {}, c.attempt), h('td', {}, c.ringResult), h('td', {}, c.answerType ?? ''), h('td', {}, c.outcome)),
    update: () => {},
  }), 'No calls yet.');

  main.replaceChildren(
    ...title,
    stateGroup,
    summary,
    h('section', { 'aria-labelledby': 'numbers-title' }, h('h3', { id: 'numbers-title' }, 'Numbers'), filterForm, numbers.wrap,
      h('div', { class: 'pager' }, prev, pageInfo, next, deleteSelected), h('div', { class: 'two' }, paste, upload), intakeResult),
    h('section', { 'aria-labelledby': 'calls-title' }, h('h3', { id: 'calls-title' }, 'Call log (live)'), callCount, calls.wrap),
  );
  return {
    refresh: async () => {
      campaign = await find();
      showSummary(campaign);
      title[1].textContent = campaign.name;
      const { data: log } = await api('GET', `${base}/campaigns/${enc(campaignId)}/callLog`);
      setCalls(log.records);
      callCount.textContent = `${log.calls} call${log.calls === 1 ? '' : 's'}; the newest ${log.records.length} shown, newest first.`;
      await refreshNumbers();
    },
  };
}

// ---- the clock -----------------------------------------------------------------------------------------------

const clockMode = document.getElementById('clock-mode');
const clockNow = document.getElementById('clock-now');
const clockButtons = document.getElementById('clock-advance');

async function refreshClock() {
  const { data } = await api('GET', '/console/clock');
  // A real-time clock may run faster than the wall clock (./dev start runs it at 60x): its label says so.
  clockMode.textContent = data.mode === 'manual' ? 'Manual clock' : data.speed === 1 ? 'Real-time clock' : `Virtual clock ×${data.speed}`;
  clockMode.title = data.mode === 'manual' ? 'Moves only when advanced'
    : data.speed === 1 ? 'One simulated second per real second' : `${data.speed} simulated seconds per real second`;
  clockNow.dateTime = data.now;
  clockNow.textContent = data.now.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  clockButtons.hidden = data.mode !== 'manual';
}

for (const b of clockButtons.querySelectorAll('button')) {
  b.addEventListener('click', () => act(b, async () => {
    const { data } = await api('POST', '/console/clock/advance', { seconds: Number(b.dataset.advance) });
    say(`Clock advanced to ${data.now}; ${data.eventsApplied} simulation events applied.`);
    await refreshClock();
    await view.refresh();
  }));
}

// ---- routing and polling -------------------------------------------------------------------------------------

/** What an address names that is not there: a route the console does not have, or a record the server does not know. */
function notFoundView(detail) {
  main.replaceChildren(...heading('Not found', [['Accounts', '#/']]), h('p', {}, detail));
  return { refresh: async () => {} };
}

/** The segments of the hash route, decoded; null when one is not valid percent-encoded UTF-8 (`%E0%A4%A`). */
function routeParts() {
  try {
    return location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return null;
  }
}

let routeToken = 0;
/** Shows the view the hash names; after a navigation (not the first load) the focus goes to its heading. */
async function route(focusHeading = true) {
  const mine = ++routeToken;
  const parts = routeParts();
  const unknown = () => notFoundView(`The console has no page at the address ${location.hash}.`);
  try {
    let next;
    if (parts === null) next = unknown();
    else if (parts.length === 4 && parts[0] === 'accounts' && parts[2] === 'campaigns') next = await campaignView(parts[1], parts[3]);
    else if (parts.length === 2 && parts[0] === 'accounts') next = await accountView(parts[1]);
    else if (parts.length === 0 || (parts.length === 1 && parts[0] === 'accounts')) next = await accountsView();
    else next = unknown();
    if (mine !== routeToken) return;
    view = next;
    await view.refresh();
  } catch (err) {
    if (mine !== routeToken) return;
    // An account or campaign the server does not have (deleted, or a mistyped address): a page that says so.
    if (err instanceof Refusal && err.status === 404) view = notFoundView(err.message);
    else return fail(err);
  }
  if (focusHeading) main.querySelector('h2')?.focus();
}

let ticking = false;
async function tick() {
  if (ticking || sessionLost || document.hidden) return;
  ticking = true;
  try {
    await refreshClock();
    await view.refresh();
  } catch (err) {
    fail(err);
  } finally {
    ticking = false;
  }
}

// Only `#/…` is a route: `#main` (the skip link) just moves the focus.
window.addEventListener('hashchange', () => {
  if (location.hash !== '' && !location.hash.startsWith('#/')) return;
  errorLine.hidden = true;
  void route();
});
void refreshClock().catch(fail);
void route(false);
setInterval(tick, REFRESH_MS);
