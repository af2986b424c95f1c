// paragon dashboard: polls the JSON API (every 1 s while jobs are queued or running, every
// 5 s otherwise, never while the tab is hidden), renders the devices and a paged job table,
// and draws a job's per-epoch loss/accuracy as inline SVG. Server strings reach the DOM only
// through textContent or attributes, never as markup.
'use strict';

const API = '/api/v1';
const PAGE = 50;            // jobs per page; the table stays fast however many jobs exist
const FAST_MS = 1000;       // poll period while any job is queued or running
const SLOW_MS = 5000;       // poll period when everything is idle
const RETRY_MS = 2000;      // poll period while the server cannot be reached
const TIMEOUT_MS = 8000;    // a request slower than this counts as "cannot reach"
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const SERIES = [            // what the detail chart draws, one small chart each
  {name: 'loss', label: 'Loss', color: '#1d4ed8', unit: false},
  {name: 'accuracy', label: 'Accuracy', color: '#15803d', unit: true},
];
// The canonical XOR job (examples/jobs/xor.json); only the three web files are embedded, so
// the dashboard carries its own copy.
const XOR_SPEC = {
  kind: 'train', name: 'xor', device: 'auto', seed: 1,
  model: {type: 'mlp', layers: [2, 8, 2], activation: 'relu'},
  data: {source: 'xor'},
  optimizer: {type: 'sgd', lr: 0.1, momentum: 0.9},
  batch_size: 4, epochs: 100,
};

const $ = (id) => document.getElementById(id);

const st = {
  offset: 0, state: '', kind: '',   // the page being shown
  timer: 0, inflight: false, again: false,
  rows: new Map(),                  // job id -> {tr, cells, job}
  open: null,                       // the expanded job's detail record, or null
  devicesKey: '',                   // last devices JSON drawn, to skip identical redraws
  versionShown: false,
  downSince: 0,
  msgTimer: 0,
};

// ---- HTTP ----------------------------------------------------------------------------

class HttpError extends Error {
  constructor(r) { super(errText(r)); this.status = r.status; }
}

async function api(path, opts = {}) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  try {
    const res = await fetch(path, {
      ...opts, signal: ctl.signal, cache: 'no-store',
      headers: {Accept: 'application/json', ...(opts.headers || {})},
    });
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
    return {status: res.status, ok: res.ok, body, headers: res.headers, text};
  } finally {
    clearTimeout(t);
  }
}

async function getJSON(path) {
  const r = await api(path);
  if (!r.ok || !r.body) throw new HttpError(r);
  return r.body;
}

// "invalid_spec: model.layers[1]: must be > 0" from the API's error object, else the status.
function errText(r) {
  const e = r.body && r.body.error;
  if (e && e.message) return (e.code ? e.code + ': ' : '') + e.message;
  if (r.ok) return 'unreadable response (HTTP ' + r.status + ')';
  return 'HTTP ' + r.status + (r.text ? ' ' + r.text.slice(0, 200) : '');
}

// ---- formatting ----------------------------------------------------------------------

function fmtBytes(n) {
  if (typeof n !== 'number' || !isFinite(n) || n < 0) return '\u2014';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)) + ' ' + units[i];
}

function fmtClock(mhz) {
  if (typeof mhz !== 'number' || !(mhz > 0)) return '\u2014';
  return mhz >= 1000 ? (mhz / 1000).toFixed(2) + ' GHz' : mhz + ' MHz';
}

function fmtNum(v) {
  if (typeof v !== 'number') return v == null ? '\u2014' : String(v);
  if (!isFinite(v) || Number.isInteger(v)) return String(v);
  if (v !== 0 && Math.abs(v) < 1e-4) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

function fmtPct(v) {
  return (v >= 0.9995 && v <= 1 ? '100' : (v * 100).toFixed(1).replace(/\.0$/, '')) + '%';
}

function fmtDur(ms) {
  if (!(ms >= 0)) return '\u2014';
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
  const m = Math.floor(s / 60), h = Math.floor(m / 60);
  if (h === 0) return m + 'm ' + String(Math.floor(s % 60)).padStart(2, '0') + 's';
  return h + 'h ' + String(m % 60).padStart(2, '0') + 'm';
}

function fmtTime(iso) {
  const t = Date.parse(iso);
  return isNaN(t) ? '\u2014' : new Date(t).toLocaleString();
}

function jobDuration(j) {
  const a = Date.parse(j.started_at);
  if (isNaN(a)) return NaN;
  const b = j.finished_at ? Date.parse(j.finished_at) : Date.now();
  return Math.max(0, b - a);
}

// One line for the Result column: loss and accuracy for training, the normal form with its
// interaction count and MIPS for inet, else the first few fields.
function resultSummary(r) {
  if (!r || typeof r !== 'object') return '';
  const parts = [];
  if (typeof r.normal_form === 'string') {
    const nf = r.normal_form.length > 40 ? r.normal_form.slice(0, 40) + '\u2026' : r.normal_form;
    return nf + ' \u00b7 ' + fmtNum(r.interactions) + ' itrs \u00b7 ' + fmtNum(r.mips) + ' MIPS';
  }
  if ('loss' in r) parts.push('loss ' + fmtNum(r.loss));
  if (typeof r.accuracy === 'number') parts.push('acc ' + fmtPct(r.accuracy));
  if (parts.length) return parts.join(' \u00b7 ');
  for (const [k, v] of Object.entries(r)) {
    if (parts.length === 3) break;
    if (v === null || typeof v !== 'object') parts.push(k + ' ' + (typeof v === 'number' ? fmtNum(v) : String(v)));
  }
  return parts.join(' \u00b7 ');
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

function setText(e, s) { if (e.textContent !== s) e.textContent = s; }
function setAttr(e, k, v) { if (e.getAttribute(k) !== v) e.setAttribute(k, v); }

// ---- refresh loop --------------------------------------------------------------------

function schedule(ms) {
  clearTimeout(st.timer);
  st.timer = document.hidden ? 0 : setTimeout(refresh, ms);
}

async function refresh() {
  clearTimeout(st.timer);
  st.timer = 0;
  if (st.inflight) { st.again = true; return; }
  st.inflight = true;
  let delay = RETRY_MS;
  try {
    const want = {offset: st.offset, state: st.state, kind: st.kind};
    const q = new URLSearchParams({limit: String(PAGE), offset: String(want.offset)});
    if (want.state) q.set('state', want.state);
    if (want.kind) q.set('kind', want.kind);
    const [jobs, devs] = await Promise.all([
      getJSON(API + '/jobs?' + q), getJSON(API + '/devices')]);
    const devices = Array.isArray(devs.devices) ? devs.devices : [];
    const list = Array.isArray(jobs.jobs) ? jobs.jobs : [];
    const total = typeof jobs.total === 'number' ? jobs.total : list.length;
    renderDevices(devices);
    if (want.offset !== st.offset || want.state !== st.state || want.kind !== st.kind) {
      st.again = true;              // the user paged or filtered meanwhile: fetch again
    } else if (list.length === 0 && total > 0 && st.offset > 0) {
      st.offset = Math.max(0, Math.floor((total - 1) / PAGE) * PAGE);   // page vanished
      st.again = true;
    } else {
      renderJobs(list, total);
      await refreshDetail();
    }
    const busy = list.some((j) => !TERMINAL.has(j.state)) ||
      devices.some((d) => d.queued > 0 || d.running_job != null);
    delay = busy ? FAST_MS : SLOW_MS;
    setDown(null);
    setText($('updated'), 'updated ' + new Date().toLocaleTimeString() +
      (busy ? ' \u00b7 live' : ''));
    if (!st.versionShown) loadVersion();
  } catch (e) {
    setDown(e);
  } finally {
    st.inflight = false;
  }
  if (st.again) { st.again = false; delay = 0; }
  schedule(delay);
}

function setDown(e) {
  const b = $('banner');
  document.body.classList.toggle('stale', !!e);
  if (!e) { b.hidden = true; st.downSince = 0; return; }
  if (!st.downSince) {
    st.downSince = Date.now();
    const u = $('updated');
    setText(u, u.textContent.replace(/^updated/, 'last update').replace(/ \u00b7 live$/, ''));
  }
  const since = new Date(st.downSince).toLocaleTimeString();
  const what = e instanceof HttpError
    ? 'The paragond server answers with an error (' + e.message + ')'
    : 'Cannot reach the paragond server at ' + location.origin;
  setText(b, what + ' since ' + since + '. Retrying every ' + RETRY_MS / 1000 +
    ' s; the figures below may be out of date.');
  b.hidden = false;
}

async function loadVersion() {
  try {
    const v = await getJSON(API + '/version');
    setText($('version'), v.version ? 'v' + v.version : '');
    const cl = (Array.isArray(v.opencl) ? v.opencl : [])
      .map((p) => [p.name, p.version].filter(Boolean).join(' \u2013 '));
    setText($('opencl'), cl.length ? cl.join('; ') : 'no OpenCL platform');
    st.versionShown = true;
  } catch (_) { /* the banner already tells; tried again on the next good refresh */ }
}

// ---- devices -------------------------------------------------------------------------

function renderDevices(devices) {
  const key = JSON.stringify(devices);
  if (key === st.devicesKey) return;
  st.devicesKey = key;
  const box = $('devices');
  box.textContent = '';
  if (!devices.length) { box.append(el('p', 'muted', 'No devices reported.')); return; }
  for (const d of devices) {
    const card = el('article', 'device');
    const h = el('h3', null, d.name || d.id || '?');
    h.title = d.name || '';
    card.append(h);
    const sub = el('div', 'device-sub');
    sub.append(el('span', 'badge type', d.type || '?'), el('code', null, d.id || ''));
    card.append(sub);
    const running = d.running_job == null ? 'idle'
      : 'job #' + (typeof d.running_job === 'object' ? d.running_job.id : d.running_job);
    const dl = el('dl');
    const rows = [
      ['Compute units', d.compute_units != null ? String(d.compute_units) : '\u2014'],
      ['Memory', d.global_mem_bytes ? fmtBytes(d.global_mem_bytes) : '—'],
      ['Clock', fmtClock(d.max_clock_mhz)],
      ['Queued', d.queued != null ? String(d.queued) : '\u2014'],
      ['Running', running],
    ];
    for (const [k, v] of rows) {
      const dd = el('dd', k === 'Running' && d.running_job != null ? 'busy' : null, v);
      dl.append(el('dt', null, k), dd);
    }
    card.append(dl);
    const extra = [d.vendor, d.platform, d.opencl_c_version,
      d.driver_version ? 'driver ' + d.driver_version : ''].filter(Boolean).join(' \u00b7 ');
    if (extra) card.append(el('p', 'device-extra', extra));
    box.append(card);
  }
}

// ---- jobs table ----------------------------------------------------------------------

function makeRow(id) {
  const tr = el('tr', 'job');
  tr.dataset.id = String(id);
  const c = {};
  const tdId = el('td', 'col-id');
  c.btn = el('button', 'expander', '#' + id);
  c.btn.type = 'button';
  c.btn.setAttribute('aria-expanded', 'false');
  c.btn.setAttribute('aria-controls', 'detail-' + id);
  c.btn.setAttribute('aria-label', 'Job ' + id + ': show metrics and result');
  tdId.append(c.btn);
  c.name = el('td', 'col-name');
  c.kind = el('td', 'col-kind');
  c.state = el('span', 'badge');
  const tdState = el('td', 'col-state');
  tdState.append(c.state);
  c.device = el('td', 'col-device');
  const tdProg = el('td', 'col-progress');
  c.bar = el('div', 'bar');
  c.bar.setAttribute('role', 'progressbar');
  c.bar.setAttribute('aria-valuemin', '0');
  c.bar.setAttribute('aria-valuemax', '100');
  c.bar.setAttribute('aria-label', 'Progress of job ' + id);
  c.fill = el('div', 'fill');
  c.bar.append(c.fill);
  c.pct = el('span', 'pct');
  tdProg.append(c.bar, c.pct);
  c.dur = el('td', 'col-duration num');
  c.result = el('td', 'col-result');
  tr.append(tdId, c.name, c.kind, tdState, c.device, tdProg, c.dur, c.result);
  tr.addEventListener('click', (ev) => {
    if (ev.target !== c.btn && String(window.getSelection())) return;   // selecting text
    toggleDetail(id);
  });
  return {tr, c, job: null};
}

function updateRow(r, j) {
  const c = r.c;
  r.job = j;
  setText(c.name, j.name || '');
  setAttr(c.name, 'title', j.name || '');
  setText(c.kind, j.kind || '');
  setText(c.state, j.state || '?');
  setAttr(c.state, 'class', 'badge state-' + (j.state || 'unknown'));
  setAttr(r.tr, 'class', 'job row-' + (j.state || 'unknown'));
  const dev = j.device || (j.device_requested ? j.device_requested + ' (requested)' : '');
  setText(c.device, dev);
  setAttr(c.device, 'title', dev);
  let p = typeof j.progress === 'number' ? j.progress : 0;
  if (j.state === 'succeeded') p = 1;
  p = Math.min(1, Math.max(0, p));
  const pct = Math.round(p * 1000) / 10;
  c.fill.style.width = pct + '%';
  setAttr(c.bar, 'aria-valuenow', String(pct));
  setText(c.pct, j.state === 'queued' ? '' : fmtPct(p));
  setText(c.dur, j.started_at ? fmtDur(jobDuration(j)) : '\u2014');
  let res = '', title = '', cls = 'col-result';
  if (j.state === 'failed' || (j.error && j.error.message)) {
    res = j.error && j.error.message ? j.error.message : 'failed';
    title = j.error ? [j.error.code, j.error.message, j.error.field && 'field ' + j.error.field]
      .filter(Boolean).join(' \u2014 ') : res;
    cls += ' err';
  } else if (j.result) {
    res = title = resultSummary(j.result);
  } else if (j.state === 'cancelled') {
    res = title = 'cancelled';
    cls += ' muted';
  }
  setText(c.result, res);
  setAttr(c.result, 'title', title);
  setAttr(c.result, 'class', cls);
}

function renderJobs(list, total) {
  const body = $('jobs-body');
  const want = [];
  const seen = new Set();
  for (const j of list) {
    let r = st.rows.get(j.id);
    if (!r) { r = makeRow(j.id); st.rows.set(j.id, r); }
    updateRow(r, j);
    setAttr(r.c.btn, 'aria-expanded', String(!!st.open && st.open.id === j.id));
    seen.add(j.id);
    want.push(r.tr);
    if (st.open && st.open.id === j.id) {
      st.open.job = j;
      want.push(st.open.tr);
    }
  }
  for (const [id, r] of st.rows) if (!seen.has(id)) st.rows.delete(id);
  if (st.open && !seen.has(st.open.id) && st.open.job) closeDetail();
  // Move only what changed place, so a focused row keeps its focus across refreshes.
  let cur = body.firstChild;
  for (const e of want) {
    if (e === cur) { cur = cur.nextSibling; continue; }
    body.insertBefore(e, cur);
  }
  while (cur) { const n = cur.nextSibling; cur.remove(); cur = n; }

  const empty = $('jobs-empty');
  empty.hidden = list.length > 0;
  setText(empty, st.state || st.kind ? 'No jobs match these filters.' : 'No jobs yet.');
  const a = list.length ? st.offset + 1 : 0, b = st.offset + list.length;
  const range = list.length ? 'showing ' + a + '\u2013' + b + ' of ' + total : 'showing 0 of ' + total;
  for (const e of document.querySelectorAll('.range')) setText(e, range);
  for (const e of document.querySelectorAll('.prev')) e.disabled = st.offset === 0;
  for (const e of document.querySelectorAll('.next')) e.disabled = st.offset + PAGE >= total;
}

// ---- job detail ----------------------------------------------------------------------

function toggleDetail(id) {
  const same = st.open && st.open.id === id;
  closeDetail();
  if (!same) openDetail(id);
}

function closeDetail() {
  if (!st.open) return;
  const r = st.rows.get(st.open.id);
  if (r) r.c.btn.setAttribute('aria-expanded', 'false');
  st.open.tr.remove();
  st.open = null;
}

function openDetail(id) {
  const tr = el('tr', 'detail');
  tr.id = 'detail-' + id;
  const td = el('td');
  td.colSpan = 8;
  const box = el('div', 'detail-body');
  const charts = el('div', 'charts');
  charts.append(el('p', 'muted', 'Loading metrics\u2026'));
  const info = el('div', 'info');
  box.append(charts, info);
  td.append(box);
  tr.append(td);
  const r = st.rows.get(id);
  const d = {
    id, tr, charts, info, job: r ? r.job : null, spec: undefined, done: false, fetched: false, error: '',
    series: Object.fromEntries(SERIES.map((s) => [s.name, []])),
    after: Object.fromEntries(SERIES.map((s) => [s.name, -1])),
    drawn: '', infoKey: '',
  };
  st.open = d;
  if (r) {
    r.c.btn.setAttribute('aria-expanded', 'true');
    r.tr.after(tr);
    drawDetail(d);
  }
  refresh();
}

// Fetches what the open detail lacks: the spec once, then new metric points (after_step),
// until the job has finished and its series are complete.
async function refreshDetail() {
  const d = st.open;
  if (!d || !d.job) return;
  try {
    if (d.spec === undefined) {
      const full = await getJSON(API + '/jobs/' + d.id);
      d.spec = full.spec || null;
    }
    if (!d.done) {
      const finished = TERMINAL.has(d.job.state);
      for (const s of SERIES) {
        for (let page = 0; page < 100; page++) {
          let url = API + '/jobs/' + d.id + '/metrics?name=' + encodeURIComponent(s.name);
          if (d.after[s.name] >= 0) url += '&after_step=' + d.after[s.name];
          const m = await getJSON(url);
          const pts = (Array.isArray(m.metrics) ? m.metrics : [])
            .filter((p) => p.name === s.name && typeof p.step === 'number' && p.step > d.after[s.name])
            .sort((x, y) => x.step - y.step);
          for (const p of pts) d.series[s.name].push(p);
          if (pts.length) d.after[s.name] = pts[pts.length - 1].step;
          if (!finished || !pts.length) break;   // a finished job: read until nothing is left
        }
      }
      d.done = finished;
      d.fetched = true;
    }
  } catch (e) {
    if (!(e instanceof HttpError)) throw e;   // unreachable server: the banner says so
    d.error = e.message;
    d.done = true;
  }
  if (st.open === d) drawDetail(d);
}

function drawDetail(d) {
  const n = SERIES.reduce((a, s) => a + d.series[s.name].length, 0);
  const drawKey = n + ' ' + d.fetched + ' ' + d.done + ' ' + d.error;
  if (drawKey !== d.drawn) {
    d.charts.textContent = '';
    if (d.error) d.charts.append(el('p', 'err', 'Metrics unavailable: ' + d.error));
    else if (n === 0) {
      d.charts.append(el('p', 'muted', !d.fetched ? 'Loading metrics\u2026'
        : d.done ? 'This job recorded no loss or accuracy metrics.'
          : 'Waiting for the first epoch\u2026'));
    } else {
      for (const s of SERIES) d.charts.append(chart(s, d.series[s.name]));
    }
    d.drawn = drawKey;
  }
  const j = d.job;
  if (!j) return;
  const key = JSON.stringify([j.state, j.result, j.error, j.started_at, j.finished_at,
    j.device, j.attempts, d.spec === undefined]);
  if (key === d.infoKey) return;
  d.infoKey = key;
  const info = d.info;
  info.textContent = '';
  const dl = el('dl', 'facts');
  const facts = [
    ['State', j.state], ['Kind', j.kind || '?'], ['Device', (j.device || '\u2014') + ' (requested ' + (j.device_requested || '?') + ')'],
    ['Attempts', j.attempts != null ? String(j.attempts) : '\u2014'],
    ['Created', fmtTime(j.created_at)], ['Started', j.started_at ? fmtTime(j.started_at) : '\u2014'],
    ['Finished', j.finished_at ? fmtTime(j.finished_at) : '\u2014'],
  ];
  for (const [k, v] of facts) dl.append(el('dt', null, k), el('dd', null, v));
  info.append(dl);
  if (j.error) {
    const box = el('div', 'errbox');
    box.append(el('strong', null, j.error.code || 'error'), document.createTextNode(': ' + (j.error.message || '')));
    if (j.error.field) box.append(el('div', 'small', 'field: ' + j.error.field));
    info.append(box);
  }
  if (j.result) {
    info.append(el('h4', null, 'Result'), el('pre', 'json', JSON.stringify(j.result, null, 2)));
  } else if (!j.error) {
    info.append(el('p', 'muted', j.state === 'cancelled' ? 'Cancelled before a result.'
      : 'No result yet (' + (j.state || '?') + ').'));
  }
  if (d.spec) {
    const det = el('details');
    det.append(el('summary', null, 'Spec'), el('pre', 'json', JSON.stringify(d.spec, null, 2)));
    info.append(det);
  }
}

// ---- SVG line chart ------------------------------------------------------------------

const SVGNS = 'http://www.w3.org/2000/svg';
const CW = 420, CH = 170;                          // viewBox size
const PAD = {l: 52, r: 12, t: 24, b: 24};          // room for axis labels and the title

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, String(attrs[k]));
  if (text != null) e.textContent = text;
  return e;
}

// Keeps the shape of a long series at chart resolution: per pixel column, its min and max.
function thin(pts, columns) {
  if (pts.length <= columns * 2) return pts;
  const out = [];
  const per = pts.length / columns;
  for (let c = 0; c < columns; c++) {
    const a = Math.floor(c * per), b = Math.min(pts.length, Math.floor((c + 1) * per));
    let lo = pts[a], hi = pts[a];
    for (let i = a + 1; i < b; i++) {
      if (pts[i].value < lo.value) lo = pts[i];
      if (pts[i].value > hi.value) hi = pts[i];
    }
    if (lo === hi) out.push(lo);
    else if (lo.step < hi.step) out.push(lo, hi);
    else out.push(hi, lo);
  }
  return out;
}

// The smallest "round" number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten) >= v,
// so that the axis reads 0 / 0.4 / 0.8 rather than 0 / 0.352 / 0.7039.
function niceCeil(v) {
  const mag = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    if (m * mag >= v * (1 - 1e-9)) return Number((m * mag).toPrecision(3));
  }
  return v;
}

function chart(s, raw) {
  const pts = raw.filter((p) => typeof p.value === 'number' && isFinite(p.value));
  const last = pts[pts.length - 1];
  const lastText = last ? (s.unit ? fmtPct(last.value) : fmtNum(last.value)) : '\u2014';
  const label = s.label + ' per epoch: ' + pts.length + ' points' +
    (last ? ', last ' + lastText + ' at step ' + last.step : '');
  const root = svg('svg', {viewBox: '0 0 ' + CW + ' ' + CH, class: 'chart', role: 'img',
    'aria-label': label});
  root.append(svg('title', {}, label));
  root.append(svg('text', {x: PAD.l, y: 15, class: 'c-title'}, s.label));
  root.append(svg('text', {x: CW - PAD.r, y: 15, class: 'c-last', 'text-anchor': 'end',
    fill: s.color}, last ? 'last ' + lastText : ''));
  const w = CW - PAD.l - PAD.r, h = CH - PAD.t - PAD.b;
  if (!pts.length) {
    root.append(svg('text', {x: PAD.l + w / 2, y: PAD.t + h / 2, 'text-anchor': 'middle',
      class: 'c-axis'}, 'no data'));
    return root;
  }
  let lo = Infinity, hi = -Infinity;
  for (const p of pts) { if (p.value < lo) lo = p.value; if (p.value > hi) hi = p.value; }
  if (s.unit && lo >= 0 && hi <= 1) { lo = 0; hi = 1; }
  else {
    if (lo > 0) lo = 0;                       // losses read best against zero
    if (lo === 0 && hi > 0) hi = niceCeil(hi);
    if (hi === lo) hi = lo + 1;
  }
  const x0 = pts[0].step, x1 = Math.max(pts[pts.length - 1].step, x0 + 1);
  const X = (v) => PAD.l + (v - x0) / (x1 - x0) * w;
  const Y = (v) => PAD.t + (1 - (v - lo) / (hi - lo)) * h;
  for (const v of [lo, (lo + hi) / 2, hi]) {
    const y = Y(v).toFixed(1);
    root.append(svg('line', {x1: PAD.l, x2: CW - PAD.r, y1: y, y2: y, class: 'c-grid'}));
    root.append(svg('text', {x: PAD.l - 6, y: Number(y) + 4, 'text-anchor': 'end', class: 'c-axis'},
      s.unit && hi <= 1 ? fmtPct(v) : fmtNum(v)));
  }
  root.append(svg('text', {x: PAD.l, y: CH - 6, class: 'c-axis'}, String(x0)));
  root.append(svg('text', {x: CW - PAD.r, y: CH - 6, 'text-anchor': 'end', class: 'c-axis'},
    String(pts[pts.length - 1].step)));
  root.append(svg('text', {x: PAD.l + w / 2, y: CH - 6, 'text-anchor': 'middle', class: 'c-axis'},
    'step'));
  const drawn = thin(pts, w);
  let dpath = '';
  for (let i = 0; i < drawn.length; i++) {
    dpath += (i ? 'L' : 'M') + X(drawn[i].step).toFixed(1) + ' ' + Y(drawn[i].value).toFixed(1);
  }
  root.append(svg('path', {d: dpath, fill: 'none', stroke: s.color, 'stroke-width': 1.8,
    'stroke-linejoin': 'round', 'vector-effect': 'non-scaling-stroke'}));
  root.append(svg('circle', {cx: X(last.step).toFixed(1), cy: Y(last.value).toFixed(1), r: 3,
    fill: s.color}));
  return root;
}

// ---- submitting the XOR example ------------------------------------------------------

function say(text, kind) {
  const m = $('submit-msg');
  clearTimeout(st.msgTimer);
  m.textContent = text;
  m.className = 'submit-msg' + (kind ? ' ' + kind : '');
  m.hidden = !text;
  if (kind === 'ok') st.msgTimer = setTimeout(() => { m.textContent = ''; m.hidden = true; }, 8000);
}

async function runXor() {
  const btn = $('run-xor');
  btn.disabled = true;
  say('Submitting\u2026');
  try {
    const r = await api(API + '/jobs', {method: 'POST',
      headers: {'Content-Type': 'application/json'}, body: JSON.stringify(XOR_SPEC)});
    if (r.ok) {
      let id = r.body && r.body.id;
      if (id == null) {
        const m = /\/jobs\/(\d+)\s*$/.exec(r.headers.get('Location') || '');
        id = m ? Number(m[1]) : null;
      }
      say(id != null ? 'Submitted job #' + id : 'Submitted', 'ok');
      st.offset = 0;
      closeDetail();
      if (id != null) openDetail(id); else refresh();
    } else {
      const e = r.body && r.body.error, f = e && e.field;
      const named = f && e.message && e.message.includes(f);   // messages usually lead with it
      say('The server rejected the XOR job (HTTP ' + r.status + '): ' + errText(r) +
        (f && !named ? ' (field ' + f + ')' : ''), 'err');
    }
  } catch (e) {
    say('Could not submit: ' + (e.name === 'AbortError' ? 'timed out' : 'server unreachable'), 'err');
  } finally {
    btn.disabled = false;
  }
}

// ---- wiring --------------------------------------------------------------------------

function setPage(offset) {
  st.offset = Math.max(0, offset);
  closeDetail();
  refresh();
}

function init() {
  for (const e of document.querySelectorAll('.prev')) e.addEventListener('click', () => setPage(st.offset - PAGE));
  for (const e of document.querySelectorAll('.next')) e.addEventListener('click', () => setPage(st.offset + PAGE));
  $('f-state').addEventListener('change', (e) => { st.state = e.target.value; setPage(0); });
  $('f-kind').addEventListener('change', (e) => { st.kind = e.target.value; setPage(0); });
  $('run-xor').addEventListener('click', runXor);
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && st.open) closeDetail(); });
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) { clearTimeout(st.timer); st.timer = 0; } else refresh();
  });
  refresh();
}

init();
