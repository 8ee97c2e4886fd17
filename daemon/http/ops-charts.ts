// The operations page's charts (browser code, included in the page's one script): per sync, the last hour or day of
// its history drawn with uPlot (loaded from the daemon's /ops/assets route), runs marked on the time axis.
// Plain JavaScript in a string: no backslashes and no template placeholders, so it goes into the page as it is.

/** Defines `loadCharts()`, `chartsFor(sync)` and `refreshCharts(syncIds)`; needs `el`, `origin`, `base` from the page. */
export const CHARTS_SCRIPT = `
  const VIEW_LABELS = { hour: 'Last hour', day: 'Last day' };
  let view = 'hour';
  const BUDGET_LABELS = { dialer: 'Dialer API key', hubspot: 'HubSpot (per 10 s)', 'hubspot-search': 'HubSpot search', pipedrive: 'Pipedrive (per 2 s)' };
  // kind: rate (a count per point, shown per minute), level (carried forward), lag (mean of the runs' lags), budget (% of the limit).
  const CHARTS = [
    { id: 'numbers', title: 'Numbers per minute', kind: 'rate', series: [['added', 'Added', '#1b7a3a'], ['deleted', 'Deleted', '#b3261e'], ['rejected', 'Rejected (parked)', '#a15c00']] },
    { id: 'activities', title: 'Activities written per minute', kind: 'rate', series: [['activities', 'Activities', '#1f5fbf']] },
    { id: 'parked', title: 'Records parked', kind: 'level', series: [['parked', 'Numbers (dialer refused)', '#a15c00'], ['mirrorParked', 'Activities (CRM refused)', '#7b3fa0']] },
    { id: 'lag', title: 'Mirror lag (seconds)', kind: 'lag', series: [['lag', 'Lag', '#b3261e']] },
    { id: 'budgets', title: 'Request budgets used (%)', kind: 'budget', series: [] },
  ];
  const BUDGET_COLORS = ['#1f5fbf', '#1b7a3a', '#a15c00', '#7b3fa0'];
  const charts = new Map(); // sync id -> { root, plots: Map(chart id -> { plot, box }) }
  let library = null;

  function loadCharts() {
    if (library) return library;
    library = new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.nonce = NONCE;
      // The origin without the user name and password a link may carry (a request with them cannot be made).
      s.src = origin + base + 'assets/uplot.js';
      s.onload = () => resolve(window.uPlot);
      s.onerror = () => { library = null; reject(new Error('could not load the charting library')); };
      document.head.append(s);
    });
    return library;
  }

  function viewSwitch() {
    const buttons = Object.keys(VIEW_LABELS).map((v) => {
      const b = el('button', { type: 'button', class: 'view', 'data-view': v, 'aria-pressed': String(v === view), text: VIEW_LABELS[v] });
      b.addEventListener('click', () => {
        view = v;
        for (const x of document.querySelectorAll('button.view')) x.setAttribute('aria-pressed', String(x.dataset.view === view));
        refreshCharts([...charts.keys()]);
      });
      return b;
    });
    return el('div', { class: 'views', role: 'group', 'aria-label': 'Chart period' }, ...buttons);
  }

  /** The sync's chart area, kept across refreshes (the section around it is rebuilt). */
  function chartsFor(sync) {
    let c = charts.get(sync);
    if (!c) {
      const root = el('div', { class: 'charts', 'data-charts': sync });
      c = { root, plots: new Map() };
      for (const def of CHARTS) {
        const box = el('figure', { class: 'chart', 'data-chart': def.id, 'data-points': '0' }, el('figcaption', { text: def.title }));
        root.append(box);
        c.plots.set(def.id, { plot: null, box, key: '' });
      }
      charts.set(sync, c);
    }
    return c.root;
  }

  function perMinute(values, stepMs) {
    return values.map((v) => (v === null ? 0 : v / (stepMs / 60000)));
  }
  function carried(values) {
    let last = null;
    return values.map((v) => (v === null ? last : (last = v)));
  }

  /** Each chart's series (name, label, colour, values) from the history body. */
  function seriesOf(def, h) {
    const raw = (name) => h.series[name] || new Array(h.points).fill(null);
    if (def.kind === 'rate') return def.series.map(([n, label, color]) => [label, color, perMinute(raw(n), h.stepMs)]);
    if (def.kind === 'level') return def.series.map(([n, label, color]) => [label, color, carried(raw(n))]);
    if (def.kind === 'lag') {
      const sum = raw('lagMs'), runs = raw('lagRuns');
      return [['Lag (mean of the mirror runs)', '#b3261e', sum.map((v, i) => (v === null || !runs[i] ? null : v / runs[i] / 1000))]];
    }
    return Object.keys(h.limits).map((b, i) => {
      const perPoint = h.limits[b] * h.stepMs / 1000;
      return [BUDGET_LABELS[b] || b, BUDGET_COLORS[i % BUDGET_COLORS.length], raw('req:' + b).map((v) => (v === null ? 0 : 100 * v / perPoint))];
    });
  }

  /** Shaded spans and a start line for each run in the window (failed runs red). */
  function runMarks(runs) {
    return {
      hooks: {
        drawClear: [(u) => {
          const ctx = u.ctx;
          const top = u.bbox.top, height = u.bbox.height;
          ctx.save();
          for (const r of runs) {
            const x0 = u.valToPos(r.start / 1000, 'x', true);
            const x1 = u.valToPos((r.end || Date.now()) / 1000, 'x', true);
            ctx.fillStyle = r.status === 'failed' ? 'rgba(179,38,30,0.14)' : 'rgba(31,95,191,0.10)';
            ctx.fillRect(x0, top, Math.max(2, x1 - x0), height);
            ctx.fillStyle = r.status === 'failed' ? '#b3261e' : '#1f5fbf';
            ctx.fillRect(x0, top, 1, height);
          }
          ctx.restore();
        }],
      },
    };
  }

  function draw(entry, def, h, width) {
    const series = seriesOf(def, h);
    const xs = Array.from({ length: h.points }, (_, i) => (h.start + i * h.stepMs) / 1000);
    const data = [xs, ...series.map((s) => s[2])];
    const points = series.reduce((n, s) => n + s[2].filter((v) => v !== null && v !== 0).length, 0);
    entry.box.dataset.points = String(points);
    entry.box.dataset.runs = String(h.runs.length);
    const key = view + '|' + series.map((s) => s[0]).join('|') + '|' + width + '|' + h.runs.map((r) => r.id + r.status + r.end).join(',');
    if (entry.plot && entry.key === key) { entry.plot.setData(data); return; }
    if (entry.plot) entry.plot.destroy();
    entry.key = key;
    entry.plot = new window.uPlot({
      width, height: 170,
      plugins: [runMarks(h.runs)],
      // The window ends with the current point's end, so the newest point is inside the frame.
      scales: { x: { time: true, range: [xs[0], xs[0] + h.points * h.stepMs / 1000] }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{}, { size: 50 }],
      series: [{}, ...series.map(([label, color]) => ({ label, stroke: color, width: 1.5, spanGaps: def.kind === 'lag', points: { show: def.kind === 'lag' || def.kind === 'level', size: 5 } }))],
    }, data, entry.box);
  }

  async function refreshCharts(syncIds) {
    const uPlot = await loadCharts();
    if (!uPlot) return;
    await Promise.all(syncIds.map(async (sync) => {
      const c = charts.get(sync);
      if (!c) return;
      const res = await fetch(origin + base + 'api/syncs/' + encodeURIComponent(sync) + '/history?view=' + view, { credentials: 'same-origin', cache: 'no-store' });
      if (!res.ok) throw new Error('history of ' + sync + ': the daemon answered ' + res.status);
      const h = await res.json();
      for (const def of CHARTS) {
        const entry = c.plots.get(def.id);
        draw(entry, def, h, Math.max(260, entry.box.clientWidth));
      }
    }));
  }
`;
