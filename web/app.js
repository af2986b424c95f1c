// paragon dashboard: polls the JSON API (every 1 s while jobs are queued or running, every
// 5 s otherwise, never while the tab is hidden), renders the devices and a paged job table,
// draws a job's per-epoch loss/accuracy as inline SVG, and charts the benchmark export (the
// latest figures per case and device, reloaded when a bench job succeeds). Server strings
// reach the DOM only through textContent or attributes, never as markup.
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
  askedToken: false,                // the token box was focused for a refused read
  msgTimer: 0,
};

// ---- HTTP ----------------------------------------------------------------------------

class HttpError extends Error {
  constructor(r) { super(errText(r)); this.status = r.status; }
}

// The API token (POST and DELETE need it; reads too when paragond listens beyond loopback),
// kept in this browser's local storage. The event streams and the checkpoint link cannot send
// it, so the token is also traded for a session cookie (POST /api/v1/session) that the server
// accepts for reads only.
const TOKEN_KEY = 'paragon.token';
function token() { try { return localStorage.getItem(TOKEN_KEY) || ''; } catch (_) { return ''; } }

// opts.token: send this token instead of the stored one.
async function api(path, opts = {}) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  const tok = opts.token !== undefined ? opts.token : token();
  const auth = tok ? {Authorization: 'Bearer ' + tok} : {};
  try {
    const res = await fetch(path, {
      ...opts, signal: ctl.signal, cache: 'no-store',
      headers: {Accept: 'application/json', ...auth, ...(opts.headers || {})},
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
      benchAfterJobs(list);         // not awaited: its own pace, its own errors
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
  if (!e) {
    b.hidden = true;
    st.downSince = 0;
    if (st.askedToken) $('token').closest('label').classList.remove('attention');
    st.askedToken = false;
    return;
  }
  if (e instanceof HttpError && e.status === 401) { askToken(e.message); return; }
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

// Reads answered 401: paragond listens beyond loopback and this browser has no token, or a
// wrong one. The banner says which; the token box is flagged (and focused the first time).
function askToken(why) {
  const b = $('banner');
  setText(b, (token()
    ? 'paragond refused the API token saved in this browser'
    : 'paragond listens beyond loopback, so showing its data needs the API token') +
    ': paste the contents of its token file (paragond prints where it is; by default data/token) ' +
    'into "API token" at the top. (' + why + ')');
  b.hidden = false;
  const label = $('token').closest('label');
  label.classList.add('attention');
  if (!st.askedToken) $('token').focus();
  st.askedToken = true;
}

// Trades the token for the session cookie, so that the event streams and the checkpoint link
// work where reads need the token. A refused token flags the box at once (where reads need the
// token, the next refresh says why; on loopback, writing would).
async function openSession() {
  if (!token()) return;
  try {
    const r = await api(API + '/session', {method: 'POST'});
    if (r.status === 401) $('token').closest('label').classList.add('attention');
  } catch (_) { /* unreachable: the refresh loop's banner says so */ }
}

// The token was removed from this browser: the cookie goes too (DELETE needs the old token).
async function closeSession(old) {
  if (!old) return;
  try { await api(API + '/session', {method: 'DELETE', token: old}); } catch (_) { /* best effort */ }
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

// Utilisation over the last minutes, from the devices' busy_seconds counters: each refresh adds
// a sample per device; a window's utilisation is the busy time gained over the time passed.
const UTIL_WINDOW_MS = 5 * 60 * 1000;
const util = new Map();   // device id -> [{t, busy}] oldest first

function sampleUtil(devices) {
  const now = Date.now();
  for (const d of devices) {
    if (typeof d.busy_seconds !== 'number') continue;
    const s = util.get(d.id) || [];
    s.push({t: now, busy: d.busy_seconds});
    while (s.length > 2 && now - s[1].t > UTIL_WINDOW_MS) s.shift();
    util.set(d.id, s);
  }
}

// Busy fraction per interval between samples, and over the whole window.
function utilOf(id) {
  const s = util.get(id) || [];
  const parts = [];
  for (let i = 1; i < s.length; i++) {
    const dt = (s[i].t - s[i - 1].t) / 1000;
    if (dt > 0) parts.push(Math.max(0, Math.min(1, (s[i].busy - s[i - 1].busy) / dt)));
  }
  const span = s.length > 1 ? (s[s.length - 1].t - s[0].t) / 1000 : 0;
  const total = span > 0 ? Math.max(0, Math.min(1, (s[s.length - 1].busy - s[0].busy) / span)) : null;
  return {parts, total, span};
}

function utilSparkline(id) {
  const {parts, total, span} = utilOf(id);
  const W = 120, H = 22;
  const label = total == null ? 'utilisation: measuring' :
    'utilisation ' + fmtPct(total) + ' over the last ' + Math.max(1, Math.round(span / 60)) + ' min';
  const root = svg('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'util', role: 'img', 'aria-label': label,
    width: W, height: H});
  root.append(svg('title', {}, label));
  const n = parts.length;
  parts.forEach((v, i) => {
    const w = W / Math.max(n, 1);
    const h = Math.max(1, v * H);
    root.append(svg('rect', {x: (i * w).toFixed(1), y: (H - h).toFixed(1), width: Math.max(1, w - 0.5).toFixed(1),
      height: h.toFixed(1), class: 'util-bar'}));
  });
  return {root, text: total == null ? '\u2014' : fmtPct(total) + ' (' + Math.max(1, Math.round(span / 60)) + ' min)'};
}

function renderDevices(devices) {
  sampleUtil(devices);
  const key = JSON.stringify(devices.map((d) => ({...d, busy_seconds: undefined}))) +
    JSON.stringify([...util.keys()].map((k) => utilOf(k).parts.length));
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
    if (typeof d.busy_seconds === 'number') {
      const u = utilSparkline(d.id);
      const dd = el('dd', 'util-cell', u.text + ' ');
      dd.append(u.root);
      dl.append(el('dt', null, 'Utilisation'), dd);
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
      st.open.job = {...st.open.job, ...j};
      st.open.listed = true;
      want.push(st.open.tr);
    }
  }
  for (const [id, r] of st.rows) if (!seen.has(id)) st.rows.delete(id);
  // A job that left this page closes its detail; one just submitted may not be listed yet.
  if (st.open && !seen.has(st.open.id) && st.open.listed) closeDetail();
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
// The open detail follows its job live over /jobs/{id}/events (Server-Sent Events): `state`
// replaces the job, `metric` adds a chart point, `log` a log line, `progress` moves the bar.
// Points already recorded come from /metrics once; a stream that fails falls back to polling
// /metrics on the refresh loop, as before. Points are keyed by step, so the two sources overlap
// harmlessly.

const LOG_TAIL = 20;        // log lines the detail shows

function toggleDetail(id) {
  const same = st.open && st.open.id === id;
  closeDetail();
  if (!same) openDetail(id);
}

function closeDetail() {
  if (!st.open) return;
  const r = st.rows.get(st.open.id);
  if (r) r.c.btn.setAttribute('aria-expanded', 'false');
  stopStream(st.open);
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
  const side = el('div', 'side');
  const actions = el('div', 'actions');
  const cancel = el('button', 'cancel', 'Cancel job');
  cancel.type = 'button';
  cancel.id = 'cancel-job';
  const ckpt = el('a', 'btn', 'Download checkpoint');
  ckpt.id = 'checkpoint';
  ckpt.href = API + '/jobs/' + id + '/checkpoint';
  ckpt.setAttribute('download', 'job-' + id + '.safetensors');
  const actMsg = el('span', 'act-msg small');
  actMsg.setAttribute('role', 'status');
  actions.append(cancel, ckpt, actMsg);
  const spec = el('details', 'spec');
  spec.append(el('summary', null, 'Spec'), el('pre', 'json', 'loading\u2026'));
  const logBox = el('div', 'logs');
  const logHead = el('h4', null, 'Log');
  const logPre = el('pre', 'log');
  logPre.id = 'job-log';
  logBox.append(logHead, logPre);
  side.append(actions, info, spec);
  box.append(charts, side, logBox);
  td.append(box);
  tr.append(td);
  const r = st.rows.get(id);
  const d = {
    id, tr, charts, info, cancel, ckpt, actMsg, spec, logPre, logHead,
    job: r ? r.job : null, specValue: undefined, done: false, fetched: false, error: '',
    listed: !!r,
    series: Object.fromEntries(SERIES.map((s) => [s.name, []])),
    polled: Object.fromEntries(SERIES.map((s) => [s.name, -1])),   // /metrics cursor
    es: null, live: false,
    logs: new Map(), logN: 0, logsFetched: false, logsKey: '',
    drawn: '', infoKey: '', drawTimer: 0, logTimer: 0,
  };
  cancel.addEventListener('click', (ev) => { ev.stopPropagation(); cancelJob(d); });
  tr.addEventListener('click', (ev) => ev.stopPropagation());
  st.open = d;
  if (r) {
    r.c.btn.setAttribute('aria-expanded', 'true');
    r.tr.after(tr);
    drawDetail(d);
  }
  startStream(d);
  loadLogs(d);
  refresh();
}

// A point into its series, in step order, once per step.
function addPoint(d, p) {
  const a = d.series[p.name];
  if (!a || typeof p.step !== 'number') return false;
  let i = a.length;
  while (i > 0 && a[i - 1].step > p.step) i--;
  if (i > 0 && a[i - 1].step === p.step) return false;
  a.splice(i, 0, {name: p.name, step: p.step, value: p.value});
  return true;
}

function startStream(d) {
  if (typeof EventSource !== 'function') return;
  let es;
  try { es = new EventSource(API + '/jobs/' + d.id + '/events'); } catch (_) { return; }
  d.es = es;
  d.live = true;
  const parse = (ev) => { try { return JSON.parse(ev.data); } catch (_) { return null; } };
  es.addEventListener('state', (ev) => {
    const j = parse(ev);
    if (!j || st.open !== d || j.id !== d.id) return;
    setJob(d, j);
    if (TERMINAL.has(j.state)) {
      stopStream(d);        // the stream ends here; the poll below collects any point missed,
      loadLogs(d);          // and this any line logged after the final state
      refresh();
    }
  });
  es.addEventListener('metric', (ev) => {
    const p = parse(ev);
    if (p && st.open === d && addPoint(d, p)) drawSoon(d);
  });
  es.addEventListener('progress', (ev) => {
    const p = parse(ev);
    if (!p || st.open !== d || !d.job || typeof p.progress !== 'number') return;
    d.job = {...d.job, progress: p.progress};
    const r = st.rows.get(d.id);
    if (r) updateRow(r, d.job);
    drawSoon(d);
  });
  es.addEventListener('log', (ev) => {
    const p = parse(ev);
    if (!p || st.open !== d || typeof p.seq !== 'number') return;
    d.logs.set(p.seq, logLine(p.time, p.level, p.line));
    if (!d.logTimer) d.logTimer = setTimeout(() => { d.logTimer = 0; if (st.open === d) drawLogs(d); }, DRAW_MS);
  });
  es.addEventListener('error', () => {
    // Refused, or dropped before the final state: poll instead (EventSource would retry
    // on its own, but the refresh loop already covers a server that comes and goes).
    if (st.open !== d || !d.live) return;
    stopStream(d);
    refresh();
  });
}

// Points can arrive thousands a second (a small model's epochs): one redraw per DRAW_MS.
const DRAW_MS = 150;
function drawSoon(d) {
  if (d.drawTimer) return;
  d.drawTimer = setTimeout(() => { d.drawTimer = 0; if (st.open === d) drawDetail(d); }, DRAW_MS);
}

function stopStream(d) {
  if (d.es) d.es.close();
  d.es = null;
  d.live = false;
}

// The job object from a stream event or an action: the detail, and its row when shown.
function setJob(d, j) {
  d.job = j;
  const r = st.rows.get(d.id);
  if (r) updateRow(r, j);
  drawDetail(d);
}

function logLine(time, level, line) {
  const t = Date.parse(time);
  const hms = isNaN(t) ? '' : new Date(t).toLocaleTimeString() + ' ';
  return hms + (level && level !== 'info' ? level.toUpperCase() + ' ' : '') + (line || '');
}

// The log lines not read yet (after=N); `log` events add to them while the stream is up.
// Lines are "<ISO time> <level> <line>"; line N is seq N.
async function loadLogs(d) {
  try {
    const from = d.logN;
    const r = await api(API + '/jobs/' + d.id + '/logs?after=' + from);
    if (!r.ok) { if (st.open === d) setText(d.logHead, 'Log (unavailable: ' + errText(r) + ')'); return; }
    const lines = r.text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    lines.forEach((s, i) => {
      const m = /^(\S+) (\S+) (.*)$/.exec(s);
      if (!d.logs.has(from + i + 1)) d.logs.set(from + i + 1, m ? logLine(m[1], m[2], m[3]) : s);
    });
    d.logN = Math.max(d.logN, from + lines.length);
    d.logsFetched = true;
    if (st.open === d) drawLogs(d);
  } catch (_) { /* unreachable: the banner tells; the stream may still fill it */ }
}

function drawLogs(d) {
  const seqs = [...d.logs.keys()].sort((a, b) => a - b);
  const tail = seqs.slice(-LOG_TAIL);
  const text = tail.map((s) => d.logs.get(s)).join('\n');
  if (text === d.logsKey) return;
  d.logsKey = text;
  const pre = d.logPre;
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.textContent = text || (d.logsFetched ? '(no log lines)' : '');
  setText(d.logHead, 'Log' + (seqs.length > LOG_TAIL ? ' (last ' + LOG_TAIL + ' of ' + seqs.length + ' lines)' : ''));
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

async function cancelJob(d) {
  d.cancel.disabled = true;
  d.actMsg.className = 'act-msg small';
  setText(d.actMsg, 'Cancelling\u2026');
  try {
    const r = await api(API + '/jobs/' + d.id + '/cancel', {method: 'POST'});
    if (st.open !== d) return;
    if (r.status === 200 || r.status === 202) {
      setText(d.actMsg, r.status === 202 ? 'Cancel requested: the job stops at its next step.' : 'Cancelled.');
      d.actMsg.className = 'act-msg small ok';
      if (r.body && r.body.id === d.id) setJob(d, r.body);
      refresh();
      return;
    }
    d.actMsg.className = 'act-msg small err';
    if (r.status === 401) {
      setText(d.actMsg, 'Not cancelled: the server needs the API token (paste data/token into "API token" at the top). ' + errText(r));
      flagToken();
    } else if (r.status === 409) {
      setText(d.actMsg, 'Not cancelled: the job has already finished (409 ' + errText(r) + ').');
      refresh();
    } else {
      setText(d.actMsg, 'Not cancelled: ' + errText(r));
    }
  } catch (e) {
    if (st.open === d) {
      d.actMsg.className = 'act-msg small err';
      setText(d.actMsg, 'Not cancelled: ' + (e.name === 'AbortError' ? 'timed out' : 'server unreachable'));
    }
  } finally {
    d.cancel.disabled = false;
    if (st.open === d) drawDetail(d, true);
  }
}

// Fetches what the open detail lacks: the spec once, the points recorded so far once, then,
// while no stream carries them, new points (after_step) until the job has finished.
async function refreshDetail() {
  const d = st.open;
  if (!d || !d.job) return;
  try {
    if (d.specValue === undefined) {
      const full = await getJSON(API + '/jobs/' + d.id);
      d.specValue = full.spec || null;
      if (st.open === d && full.id === d.id) { d.job = {...d.job, ...full}; }
    }
    if (!d.done && (!d.live || !d.fetched)) {
      const finished = TERMINAL.has(d.job.state);
      for (const s of SERIES) {
        for (let page = 0; page < 100; page++) {
          let url = API + '/jobs/' + d.id + '/metrics?name=' + encodeURIComponent(s.name);
          if (d.polled[s.name] >= 0) url += '&after_step=' + d.polled[s.name];
          const m = await getJSON(url);
          const pts = (Array.isArray(m.metrics) ? m.metrics : [])
            .filter((p) => p.name === s.name && typeof p.step === 'number' && p.step > d.polled[s.name])
            .sort((x, y) => x.step - y.step);
          for (const p of pts) addPoint(d, p);
          if (pts.length) d.polled[s.name] = pts[pts.length - 1].step;
          if (!pts.length || (!finished && !d.live)) break;   // otherwise read until nothing is left
        }
      }
      d.done = finished;
      d.fetched = true;
      if (!d.live && d.logsFetched) await loadLogs(d);   // no stream: poll the log as well
    }
  } catch (e) {
    if (!(e instanceof HttpError)) throw e;   // unreachable server: the banner says so
    d.error = e.message;
    d.done = true;
  }
  if (st.open === d) drawDetail(d);
}

function drawDetail(d, force) {
  const n = SERIES.reduce((a, s) => a + d.series[s.name].length, 0);
  const j = d.job;
  const chartable = n > 0 || (j && j.kind === 'train' && !d.error);
  const drawKey = n + ' ' + d.fetched + ' ' + d.done + ' ' + d.error + ' ' + chartable;
  if (drawKey !== d.drawn) {
    d.charts.textContent = '';
    if (d.error && n === 0) d.charts.append(el('p', 'err', 'Metrics unavailable: ' + d.error));
    else if (!chartable) {
      d.charts.append(el('p', 'muted', !d.fetched ? 'Loading metrics\u2026'
        : d.done ? 'This job recorded no loss or accuracy metrics.'
          : 'Waiting for the first epoch\u2026'));
    } else {
      for (const s of SERIES) d.charts.append(chart(s, d.series[s.name]));
    }
    d.drawn = drawKey;
  }
  if (!j) return;
  const active = !TERMINAL.has(j.state);
  d.cancel.hidden = !active;
  if (j.cancel_requested && active) {
    d.cancel.disabled = true;
    setText(d.cancel, 'Cancel requested');
  }
  d.ckpt.hidden = j.kind !== 'train';
  if (d.specValue !== undefined && !d.spec.dataset.done) {
    d.spec.dataset.done = '1';
    d.spec.lastChild.textContent = d.specValue ? JSON.stringify(d.specValue, null, 2) : '(no spec)';
  }
  const key = JSON.stringify([j.state, j.result, j.error, j.started_at, j.finished_at,
    j.device, j.attempts, j.estimate, j.cancel_requested, j.progress]);
  if (key === d.infoKey && !force) return;
  d.infoKey = key;
  const info = d.info;
  info.textContent = '';
  const dl = el('dl', 'facts');
  const stateDd = el('dd', null, (j.state || '?') + (j.cancel_requested && active ? ' (cancel requested)' : ''));
  stateDd.id = 'job-state';
  stateDd.dataset.state = j.state || '';
  dl.append(el('dt', null, 'State'), stateDd);
  const wait = Date.parse(j.started_at) - Date.parse(j.created_at);
  const facts = [
    ['Kind', j.kind || '?'],
    ['Device', (j.device || '\u2014') + ' (requested ' + (j.device_requested || '?') + ')'],
    ['Attempts', j.attempts != null ? String(j.attempts) : '\u2014'],
    ['Created', fmtTime(j.created_at)],
    ['Started', j.started_at ? fmtTime(j.started_at) + (wait >= 0 ? ' (queued ' + fmtDur(wait) + ')' : '') : '\u2014'],
    ['Finished', j.finished_at ? fmtTime(j.finished_at) : '\u2014'],
    ['Run time', j.started_at ? fmtDur(jobDuration(j)) + (j.finished_at ? '' : ' so far') : '\u2014'],
  ];
  if (typeof j.progress === 'number' && active && j.state !== 'queued') facts.push(['Progress', fmtPct(j.progress)]);
  for (const [k, v] of facts) dl.append(el('dt', null, k), el('dd', null, v));
  info.append(dl);
  if (j.estimate && typeof j.estimate === 'object') info.append(estimateBox(j.estimate));
  if (j.error) {
    const box = el('div', 'errbox');
    box.append(el('strong', null, j.error.code || 'error'), document.createTextNode(': ' + (j.error.message || '')));
    if (j.error.field) box.append(el('div', 'small', 'field: ' + j.error.field));
    info.append(box);
  }
  if (j.result) {
    info.append(el('h4', null, 'Result'), resultFacts(j.result));
    const raw = el('details');
    raw.append(el('summary', null, 'Result JSON'), el('pre', 'json', JSON.stringify(j.result, null, 2)));
    info.append(raw);
  } else if (!j.error) {
    info.append(el('p', 'muted', j.state === 'cancelled' ? 'Cancelled before a result.'
      : 'No result yet (' + (j.state || '?') + ').'));
  }
}

// Where the scheduler placed the job and why: its pick, the estimate, every candidate.
function estimateBox(e) {
  const box = el('div', 'estimate');
  box.append(el('h4', null, 'Placement'));
  const p = el('p', 'small');
  p.append(el('strong', null, e.device || '?'), document.createTextNode(
    ': ' + (e.reason || 'no reason recorded') +
    (num(e.seconds) ? '; estimated ' + fmtDur(e.seconds * 1000) : '') +
    (num(e.queue_seconds) && e.queue_seconds > 0 ? ' after ' + fmtDur(e.queue_seconds * 1000) + ' queued' : '')));
  box.append(p);
  const c = Array.isArray(e.candidates) ? e.candidates : [];
  if (c.length) {
    const ul = el('ul', 'candidates small');
    for (const x of c) {
      const li = el('li', x.device === e.device ? 'chosen' : null);
      li.append(el('code', null, x.device || '?'), document.createTextNode(
        ' \u2014 ' + (num(x.seconds) ? fmtDur(x.seconds * 1000) : '?') +
        (num(x.queue_seconds) && x.queue_seconds > 0 ? ' + ' + fmtDur(x.queue_seconds * 1000) + ' queued' : '') +
        (x.measured === false ? ' (rates not measured)' : '')));
      ul.append(li);
    }
    box.append(ul);
  }
  return box;
}

// The figures that answer "did it work": accuracy and weights hash for training, the normal
// form with its cost for inet, else the first few scalar fields.
function resultFacts(r) {
  const dl = el('dl', 'facts result');
  const add = (k, v, cls) => { const dd = el('dd', cls, v); dl.append(el('dt', null, k), dd); };
  if (typeof r.normal_form === 'string') {
    add('Normal form', r.normal_form, 'mono');
    add('Interactions', fmtQty(r.interactions));
    add('MIPS', fmtNum(r.mips));
    if (num(r.seconds)) add('Seconds', fmtNum(r.seconds));
  } else if ('accuracy' in r || 'weights_sha256' in r) {
    if (num(r.accuracy)) add('Accuracy', fmtPct(r.accuracy));
    if (num(r.loss)) add('Loss', fmtNum(r.loss));
    if (r.weights_sha256) add('Weights SHA-256', String(r.weights_sha256), 'mono hash');
    if (num(r.seconds)) add('Seconds', fmtNum(r.seconds));
  } else {
    let n = 0;
    for (const [k, v] of Object.entries(r)) {
      if (n === 6) break;
      if (v === null || typeof v !== 'object') { add(k, typeof v === 'number' ? fmtNum(v) : String(v)); n++; }
      else if (Array.isArray(v)) { add(k, v.length + ' items'); n++; }
    }
  }
  return dl;
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
    'aria-label': label, 'data-series': s.name, 'data-points': pts.length});
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

// ---- submitting jobs -----------------------------------------------------------------
// The "New job" panel: a template fills the JSON spec (examples/jobs/*.json and
// examples/inet/fib.hvm, copied: only the three web files are embedded), the inputs beside it
// patch their field of that spec, and the spec as edited is what is sent. A 400 names the
// field (a JSON path); the message goes next to the input that owns that field, else under
// the spec with the path highlighted.

const FIB_HVM = `// fib(n), the doubly recursive way: fib(0) = 0, fib(1) = 1, fib(n) = fib(n-1) + fib(n-2).
// A switch on n peels one step (?(zero succ)); the successor case gets n-1 and switches again,
// so @fib_ss receives q = n-2, duplicates it, and adds fib(q+1) and fib(q). The two recursive
// calls are independent: plenty of parallel work, and CALL, SWIT, OPER and DUP copies of numbers.
@fib = (?((0 @fib_s) r) r)
@fib_s = (?((1 @fib_ss) r) r)
@fib_ss = ({q0 q1} r)
  & q0 ~ $([+1] a)
  & @fib ~ (a x)
  & @fib ~ (q1 y)
  & x ~ $([+] $(y r))

@main = r & @fib ~ (22 r)
`;

const TEMPLATES = {
  xor: {group: 'train', spec: () => XOR_SPEC},
  'fashion-mlp': {group: 'train', spec: () => ({
    kind: 'train', name: 'fashion-mlp', device: 'auto', seed: 0,
    model: {type: 'mlp', layers: [784, 256, 256, 10], activation: 'relu'},
    data: {source: 'fashion-mnist'},
    optimizer: {type: 'sgd', lr: 0.05, momentum: 0.9},
    batch_size: 128, epochs: 5, checkpoint_every: 1,
  })},
  inet: {group: 'inet', spec: () => ({kind: 'inet', name: 'fib', device: 'auto',
    program: $('program').value})},
  bench: {group: 'bench', spec: () => ({kind: 'bench', suite: $('suite').value, device: 'all'})},
};

// Which form input owns a spec field: its own error slot, and the spec key it patches.
const FIELD_INPUTS = {epochs: 'epochs', program: 'program', suite: 'suite'};

function say(text, kind) {
  const m = $('submit-msg');
  clearTimeout(st.msgTimer);
  m.textContent = text;
  m.className = 'submit-msg' + (kind ? ' ' + kind : '');
  m.hidden = !text;
  if (kind === 'ok') st.msgTimer = setTimeout(() => { m.textContent = ''; m.hidden = true; }, 8000);
}

function flagToken() {
  const t = $('token');
  t.closest('label').classList.add('attention');
  t.focus();
}

function clearFormErrors() {
  const e = $('submit-error');
  e.hidden = true;
  e.textContent = '';
  for (const f of Object.values(FIELD_INPUTS)) {
    const m = $(f + '-error');
    m.hidden = true;
    m.textContent = '';
    $(f).classList.remove('invalid');
    $(f).removeAttribute('aria-invalid');
  }
  $('spec').classList.remove('invalid');
}

function formError(parts) {
  const e = $('submit-error');
  e.textContent = '';
  for (const p of parts) e.append(typeof p === 'string' ? document.createTextNode(p) : p);
  e.hidden = false;
}

function readSpec() {
  try { const v = JSON.parse($('spec').value); return v && typeof v === 'object' ? v : null; } catch (_) { return null; }
}

// Pretty JSON with arrays of numbers on one line ("layers": [2, 8, 2]); a raw newline is
// only ever formatting, never inside a JSON string, so the pattern cannot touch a string.
function writeSpec(v) {
  $('spec').value = JSON.stringify(v, null, 2).replace(/\[\n\s*(-?[\d.eE+-]+(?:,\n\s*-?[\d.eE+-]+)*)\n\s*\]/g,
    (_, inner) => '[' + inner.split(/,\n\s*/).join(', ') + ']');
}

// A template's spec, its inputs shown and filled from it.
function applyTemplate(name) {
  const t = TEMPLATES[name] || TEMPLATES.xor;
  for (const e of document.querySelectorAll('.tpl')) e.hidden = !e.classList.contains('tpl-' + t.group);
  const spec = JSON.parse(JSON.stringify(t.spec()));
  if (t.group === 'train') $('epochs').value = String(spec.epochs);
  writeSpec(spec);
  clearFormErrors();
}

// An input changed: set its field in the spec as edited (or, when that no longer parses,
// in a fresh copy of the template's).
function patchSpec(key, value) {
  const v = readSpec() || JSON.parse(JSON.stringify(TEMPLATES[$('template').value].spec()));
  v[key] = value;
  writeSpec(v);
}

// The spec's text span for a JSON path like "model.layers[1]": the last key's name, at the
// nesting its path implies when that can be found, else anywhere.
function specSpan(text, path) {
  const keys = String(path).split('.').map((k) => k.replace(/\[\d+\]/g, '')).filter(Boolean);
  let from = 0;
  for (const k of keys) {
    const at = text.indexOf('"' + k + '"', from);
    if (at < 0) return null;
    from = at;
  }
  const last = keys[keys.length - 1];
  return last ? [from, from + last.length + 2] : null;
}

async function submitSpec(body, how) {
  clearFormErrors();
  say('');
  const btn = $('submit-job');
  btn.disabled = true;
  $('run-xor').disabled = true;
  try {
    const r = await api(API + '/jobs', {method: 'POST',
      headers: {'Content-Type': 'application/json'}, body});
    if (r.ok) {
      let id = r.body && r.body.id;
      if (id == null) {
        const m = /\/jobs\/(\d+)\s*$/.exec(r.headers.get('Location') || '');
        id = m ? Number(m[1]) : null;
      }
      const ids = r.body && Array.isArray(r.body.ids) && r.body.ids.length > 1 ? r.body.ids : null;
      say((id != null ? 'Submitted job #' + id : 'Submitted') + (ids ? ' (jobs #' + ids.join(', #') + ')' : ''), 'ok');
      $('token').closest('label').classList.remove('attention');
      // Show the new job: first page, no filter that could hide it, its detail open.
      st.offset = 0;
      st.state = st.kind = '';
      $('f-state').value = $('f-kind').value = '';
      closeDetail();
      if (id != null) openDetail(id); else refresh();
      return;
    }
    const e = r.body && r.body.error, f = e && e.field;
    if (r.status === 401) {
      formError(['The server needs the API token to run jobs: paste the contents of paragond\'s ' +
        'token file (it prints where; by default data/token) into "API token" at the top. (' + errText(r) + ')']);
      flagToken();
      return;
    }
    const where = f && how === 'form' ? FIELD_INPUTS[String(f).split(/[.[]/)[0]] : null;
    if (where && !$(where).closest('.tpl').hidden) {
      const m = $(where + '-error');
      m.textContent = e.message || errText(r);
      m.hidden = false;
      $(where).classList.add('invalid');
      $(where).setAttribute('aria-invalid', 'true');
      formError(['Rejected (HTTP ' + r.status + (e.code ? ', ' + e.code : '') + '): see ',
        el('code', 'field-path', f), ' above.']);
      $(where).focus();
      return;
    }
    const parts = ['Rejected (HTTP ' + r.status + '): ' + errText(r)];
    if (f) parts.push(' \u2014 field ', el('mark', 'field-path', f));
    formError(parts);
    if (f && how === 'form') {
      const ta = $('spec');
      ta.classList.add('invalid');
      const span = specSpan(ta.value, f);
      if (span) {
        ta.focus();
        ta.setSelectionRange(span[0], span[1]);
        const line = ta.value.slice(0, span[0]).split('\n').length - 1;
        const lh = parseFloat(getComputedStyle(ta).lineHeight) || 17;
        ta.scrollTop = Math.max(0, line * lh - ta.clientHeight / 3);
      }
    }
  } catch (e) {
    formError(['Could not submit: ' + (e.name === 'AbortError' ? 'timed out' : 'server unreachable')]);
  } finally {
    btn.disabled = false;
    $('run-xor').disabled = false;
  }
}

function submitForm(ev) {
  ev.preventDefault();
  const text = $('spec').value;
  try { JSON.parse(text); } catch (e) {
    clearFormErrors();
    $('spec').classList.add('invalid');
    formError(['The spec is not valid JSON: ' + e.message]);
    return;
  }
  submitSpec(text, 'form');
}

// The one-click XOR run: the canonical spec whatever the form holds.
function runXor() { submitSpec(JSON.stringify(XOR_SPEC), 'button'); }

function initForm() {
  $('template').addEventListener('change', (e) => applyTemplate(e.target.value));
  $('reset-spec').addEventListener('click', () => applyTemplate($('template').value));
  $('job-form').addEventListener('submit', submitForm);
  $('epochs').addEventListener('input', (e) => {
    const n = Number(e.target.value);
    patchSpec('epochs', e.target.value.trim() !== '' && Number.isFinite(n) ? n : e.target.value);
  });
  $('program').addEventListener('input', (e) => patchSpec('program', e.target.value));
  $('suite').addEventListener('change', (e) => patchSpec('suite', e.target.value));
  $('program-file').addEventListener('change', async (e) => {
    const f = e.target.files && e.target.files[0];
    if (!f) return;
    try {
      $('program').value = await f.text();
      const v = readSpec() || {};
      patchSpec('program', $('program').value);
      if (!v.name || v.name === 'fib') patchSpec('name', f.name.replace(/\.hvm$/, ''));
    } catch (err) {
      formError(['Could not read ' + f.name + ': ' + err.message]);
    }
  });
  $('spec').addEventListener('input', () => $('spec').classList.remove('invalid'));
  if (!$('program').value) $('program').value = FIB_HVM;
  applyTemplate($('template').value);   // the browser may restore the last template chosen
}

// "#token=..." in the address: stored as the API token, then taken out of the address (and
// of the history) so that it is not bookmarked or shared by accident.
function tokenFromFragment() {
  const m = /^#token=([^&]*)/.exec(location.hash);
  if (!m) return;
  try { localStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]).trim()); } catch (_) { /* private mode */ }
  history.replaceState(null, '', location.pathname + location.search);
}

// ---- benchmarks panel ----------------------------------------------------------------
// GET /api/v1/benchmarks?suite= returns a suite's rows oldest first; the panel keeps the
// latest row per (case, device), tabulates them and draws them as grouped horizontal bars.
// It is reloaded when a bench job is seen to succeed, when the suite changes, and at most
// every BENCH_EVERY_MS otherwise (a job on another page of the job table finishes unseen),
// never at the jobs' 1 s pace: a suite's export can be thousands of rows.

const BENCH_EVERY_MS = 30000;
const BENCH_LIMIT = 1000;   // newest rows fetched: every case of the last runs of many devices
const LOG_SPAN = 20;        // a log axis once the largest bar is this many times the smallest
const HOST_COLOR = '#b45309', DEVICE_COLOR = '#1d4ed8';
const DEVICE_COLORS = ['#1d4ed8', '#15803d', '#b45309', '#7c3aed', '#be185d', '#0e7490'];

// Per suite: the table's figure columns ([row key, header, formatter]; numbers right-aligned)
// and the chart. `order` fixes the case order where it means something (the crossover is read
// along it); other suites keep the order their rows first name the cases in, which is the
// order the engine runs them. A `versus` chart draws one chart per device, the device's figure
// against the host reference measured in the same run; a `metric` chart one bar per device.
const BENCH = {
  'mlp-forward': {
    order: ['S1', 'S2', 'S3', 'M1', 'M2', 'M3', 'L1', 'L2', 'XL1', 'XL2'],
    cols: [['shape', 'shape', String], ['est_mb', 'est. MB'], ['cpu_ms', 'host ms'],
      ['gpu_ms', 'device ms'], ['speedup', 'speedup', fmtX], ['mae', 'MAE'], ['max', 'max err'],
      ['gpu_init_ms', 'init ms'], ['batch', 'batch'], ['cpu_batch_sps', 'host samples/s', fmtQty],
      ['gpu_batch_sps', 'device samples/s', fmtQty]],
    versus: {title: 'latency per case (lower is better)', axis: 'latency, ms',
      host: 'cpu_ms', device: 'gpu_ms', ratio: (r) => pick(r.speedup, r.cpu_ms / r.gpu_ms),
      crossover: true},
  },
  'tensor-micro': {
    cols: [['elements', 'elements', fmtQty], ['host_ms', 'host ms'], ['device_ms', 'device ms'],
      ['speedup', 'speedup', fmtX], ['host_gbps', 'host GB/s'], ['device_gbps', 'device GB/s'],
      ['device_elems_per_s', 'device elem/s', fmtQty], ['launch_us', 'launch \u00b5s']],
    metric: {key: 'device_gbps', title: 'device bandwidth per case (higher is better)',
      axis: 'device GB/s'},
  },
  gemm: {
    cols: [['m', 'm'], ['n', 'n'], ['k', 'k'], ['device_ms', 'device ms'],
      ['gflops', 'GFLOP/s'], ['host_gflops', 'host GFLOP/s'], ['bit_identical', 'identical', fmtYes]],
    versus: {title: 'GFLOP/s per case (higher is better)', axis: 'GFLOP/s',
      host: 'host_gflops', device: 'gflops', ratio: (r) => r.gflops / r.host_gflops,
      identity: 'bit_identical'},
  },
  inet: {
    caseHead: 'program',
    cols: [['work_items', 'work items'], ['interactions', 'interactions', fmtQty],
      ['seconds', 'seconds'], ['mips', 'MIPS'], ['peak_nodes', 'peak nodes', fmtQty],
      ['result', 'result', String]],
    metric: {key: 'mips', title: 'MIPS per program (higher is better)', axis: 'MIPS'},
  },
  train: {
    cols: [['epochs', 'epochs'], ['seconds_per_epoch', 's/epoch'],
      ['samples_per_second', 'samples/s', fmtQty], ['gflops', 'GFLOP/s'],
      ['test_accuracy', 'test acc.', fmtPct]],
    metric: {key: 'samples_per_second', title: 'training throughput (higher is better)',
      axis: 'samples/s'},
  },
};

const bench = {
  suite: 'mlp-forward',
  seq: 0,              // bumped per load; an answer for an older load is dropped
  loadedAt: 0,         // when the last load started; 0 asks the next refresh for one
  drawn: '',           // suite + response text last drawn, to skip identical redraws
  jobs: new Map(),     // bench job id -> last state seen in the job table
  since: Date.now(),   // bench jobs first seen finished after this finished while we watched
};

const num = (v) => typeof v === 'number' && isFinite(v);
const pick = (a, b) => num(a) ? a : b;

// Ratios to 3 figures at most: 0.13x, 2.15x, 27.4x (the noise is larger than a 4th).
function fmtX(v) { return num(v) ? (Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) + '\u00d7' : fmtNum(v); }
function fmtYes(v) { return typeof v === 'boolean' ? (v ? 'yes' : 'no') : fmtNum(v); }

// Counts and rates with digit groups (20,001,398 interactions, 128,000 samples/s), and past
// a billion in G (77.73G elements/s), where a row of digit groups no longer reads at a glance.
function fmtQty(v) {
  if (!num(v) || Math.abs(v) < 1e4) return fmtNum(v);
  if (Math.abs(v) >= 1e9) return fmtNum(v / 1e9) + 'G';
  return (Number.isInteger(v) ? v : Number(v.toPrecision(4))).toLocaleString('en-US');
}

// Axis ticks: 2.5k, 128k, 1.5M rather than 2500, 128000, 1500000.
function fmtAxis(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return fmtNum(v / 1e9) + 'G';
  if (a >= 1e6) return fmtNum(v / 1e6) + 'M';
  if (a >= 1e4) return fmtNum(v / 1e3) + 'k';
  return fmtNum(v);
}

function benchURL(suite, format) {
  return API + '/benchmarks?suite=' + encodeURIComponent(suite) + '&format=' + format;
}

function setBenchSuite(suite) {
  bench.suite = suite;
  for (const f of ['csv', 'json']) {
    const a = $('b-' + f);
    a.href = benchURL(suite, f);
    a.download = 'paragon-bench-' + suite + '.' + f;
    a.setAttribute('aria-label', 'Download the ' + suite + ' rows as ' + f.toUpperCase());
  }
  loadBench();
}

// Called after each good refresh of the job table: reloads when a bench job has just
// succeeded (seen running before, or first seen already finished since the page opened),
// else when the last load is BENCH_EVERY_MS old.
function benchAfterJobs(list) {
  let done = false;
  for (const j of list) {
    if (j.kind !== 'bench') continue;
    const before = bench.jobs.get(j.id);
    if (j.state === 'succeeded' && before !== 'succeeded' && (before !== undefined ||
        Date.parse(j.finished_at) > bench.since)) done = true;
    bench.jobs.set(j.id, j.state);
  }
  if (done || Date.now() - bench.loadedAt >= BENCH_EVERY_MS) loadBench();
}

async function loadBench() {
  const suite = bench.suite, seq = ++bench.seq;
  bench.loadedAt = Date.now();
  let r;
  try {
    r = await api(benchURL(suite, 'json') + '&limit=' + BENCH_LIMIT);
  } catch (_) {
    // Unreachable: the banner says so; keep what is drawn and load on the next good refresh.
    if (seq === bench.seq) bench.loadedAt = 0;
    return;
  }
  if (seq !== bench.seq) return;                      // the suite changed meanwhile
  if (r.status === 401) bench.loadedAt = 0;           // again once a token lets reads in
  $('b-exports').hidden = r.status === 404;           // links to a 404 would only mislead
  if (r.ok && r.body && Array.isArray(r.body.rows)) {
    const key = suite + '\n' + r.text;
    if (key !== bench.drawn) { bench.drawn = key; renderBench(suite, r.body.rows); }
    return;
  }
  // A server without the export (404), or one that fails it: say so quietly, draw nothing.
  bench.drawn = '';
  showBench(false);
  benchMsg(r.status === 404
    ? ['This server has no benchmarks export (', el('code', null, 'GET ' + API + '/benchmarks'),
      ' answers 404).']
    : r.status === 401 ? ['Benchmarks need the API token: see the note at the top.']
    : ['Benchmarks unavailable: ' + errText(r)], r.status === 404 ? '' : 'err');
}

function benchMsg(parts, kind) {
  const m = $('bench-msg');
  m.textContent = '';
  m.className = 'bench-msg' + (kind ? ' ' + kind : '');
  m.append(...parts);
  m.hidden = !parts.length;
}

function showBench(on) {
  $('bench-table-wrap').hidden = !on;
  if (!on) { $('bench-charts').textContent = ''; setText($('bench-note'), ''); }
}

// The latest row per (case, device): rows come oldest first, so a later one replaces an
// earlier. Returned in case order, devices by name within a case.
function latestRows(def, rows) {
  const latest = new Map(), seen = new Map();
  for (const r of rows) {
    if (!r || typeof r.case !== 'string' || typeof r.device !== 'string') continue;
    latest.set(r.case + '\u0000' + r.device, r);
    if (!seen.has(r.case)) seen.set(r.case, seen.size);
  }
  const order = def.order || [];
  const rank = (c) => order.includes(c) ? order.indexOf(c) : order.length + seen.get(c);
  return [...latest.values()].sort((a, b) =>
    rank(a.case) - rank(b.case) || (a.device < b.device ? -1 : a.device > b.device ? 1 : 0));
}

function renderBench(suite, rows) {
  const def = BENCH[suite];
  const list = latestRows(def, rows);
  if (!list.length) {
    showBench(false);
    benchMsg(['No benchmark rows for ' + suite + ' yet: submit a bench job, ',
      el('code', null, JSON.stringify({kind: 'bench', suite})), ' to ',
      el('code', null, 'POST ' + API + '/jobs'), '. (', el('code', null, 'paragon bench'),
      ' prints its figures in the terminal; it does not record them here.)'], '');
    return;
  }
  benchMsg([], '');
  const devices = [...new Set(list.map((r) => r.device))].sort();
  const newest = list.reduce((a, r) => (r.created_at > a ? r.created_at : a), '');
  setText($('bench-note'), 'latest per case and device, from ' + rows.length + ' row' +
    (rows.length === 1 ? '' : 's') + ' \u00b7 newest ' + fmtTime(newest));
  benchTable(suite, def, list);
  const box = $('bench-charts');
  box.textContent = '';
  if (def.versus) {
    // One axis for every device's chart, so that bars of the same length mean the same figure.
    const all = list.flatMap((r) => [r[def.versus.host], r[def.versus.device]]);
    for (const d of devices) box.append(versusChart(suite, def, list.filter((r) => r.device === d), all));
  }
  else box.append(metricChart(suite, def, list, devices));
  showBench(true);
}

function benchTable(suite, def, list) {
  setText($('bench-caption'), 'Latest ' + suite + ' figures per ' + (def.caseHead || 'case') +
    ' and device.');
  const head = $('bench-head');
  head.textContent = '';
  const th = (text, cls) => { const e = el('th', cls, text); e.scope = 'col'; return e; };
  head.append(th(def.caseHead || 'case'), th('device'));
  for (const [, h, f] of def.cols) head.append(th(h, f === String ? null : 'num'));
  head.append(th('job', 'num'), th('measured'));
  const body = $('bench-body');
  body.textContent = '';
  for (const r of list) {
    const tr = el('tr');
    const c = el('th', 'b-case', r.case);
    c.scope = 'row';
    const d = el('td', 'b-device', r.device);
    d.title = [r.adapter, r.version && 'paragon ' + r.version].filter(Boolean).join(' \u00b7 ');
    tr.append(c, d);
    for (const [k, , f] of def.cols) {
      const v = r[k];
      const td = el('td', f === String ? null : 'num', v == null ? '\u2014' : (f || fmtNum)(v));
      // Mark where the device beats the host, and what the reader must not miss: a result
      // that differs from the host's or from the expected one.
      if (k === 'speedup' && num(v) && v > 1) td.classList.add('win');
      if ((k === 'bit_identical' && v === false) || (k === 'result' && v !== 'ok' && v != null)) {
        td.classList.add('err');
      }
      tr.append(td);
    }
    tr.append(el('td', 'num', r.job_id != null ? '#' + r.job_id : '\u2014'));
    const t = Date.parse(r.created_at);
    const when = el('td', 'muted', isNaN(t) ? '\u2014'
      : new Date(t).toLocaleString(undefined, {dateStyle: 'short', timeStyle: 'short'}));
    when.title = r.created_at || '';
    tr.append(when);
    body.append(tr);
  }
}

function shortName(s, n) { return s && s.length > n ? s.slice(0, n - 1) + '\u2026' : s || ''; }

// One device's figure against the host reference of the same run, per case, with the ratio at
// the right. For mlp-forward, also where the device starts to win (the crossover); for gemm,
// whether every product matched the host's bit for bit.
function versusChart(suite, def, rows, domain) {
  const v = def.versus, dev = rows[0].device;
  const groups = rows.map((r) => {
    const ratio = v.ratio(r);
    return {
      label: r.case,
      bars: [
        {value: r[v.host], color: HOST_COLOR, tip: r.case + ', host: ' + fmtNum(r[v.host])},
        {value: r[v.device], color: DEVICE_COLOR, tip: r.case + ', device: ' + fmtNum(r[v.device])},
      ],
      note: num(ratio) ? fmtX(ratio) : '',
      noteClass: num(ratio) && ratio > 1 ? 'c-win' : 'c-lose',
      win: num(ratio) && ratio > 1,
    };
  });
  let sub = '', subClass = '', mark = null;
  if (v.crossover) {
    const at = groups.findIndex((g) => g.win);
    const known = rows.some((r) => num(v.ratio(r)));
    if (!known) sub = 'no device figures';
    else if (at < 0) sub = 'host wins on every case';
    else {
      const back = groups.slice(at).filter((g) => !g.win).map((g) => g.label);
      sub = at === 0 ? 'device wins on every case' : 'device wins from ' + groups[at].label + ' on';
      if (back.length) sub += ' (except ' + back.join(', ') + ')';
      subClass = 'c-win';
      if (at > 0) mark = {at, text: '\u25be device faster from ' + groups[at].label};
    }
  } else if (v.identity) {
    const off = rows.filter((r) => r[v.identity] === false).map((r) => r.case);
    const checked = rows.filter((r) => typeof r[v.identity] === 'boolean').length;
    if (off.length) { sub = 'differs from the host on ' + off.join(', '); subClass = 'c-bad'; }
    else if (checked) sub = 'bit-identical to the host on every case';
  }
  const adapter = shortName(rows[0].adapter, 44);
  return barChart({
    title: dev + (adapter && adapter !== dev ? ' (' + adapter + ')' : ''),
    sub: v.title + (sub ? ' \u00b7 ' : ''), verdict: sub, verdictClass: subClass,
    legend: [{label: 'host reference', color: HOST_COLOR}, {label: 'device', color: DEVICE_COLOR}],
    groupHead: def.caseHead || 'case', noteHead: suite === 'mlp-forward' ? 'speedup' : 'dev/host',
    axis: v.axis, groups, mark, domain,
    label: suite + ' on ' + dev + ': ' + v.title + ', host reference against the device' +
      (sub ? '; ' + sub : '') + '. The table below has the figures.',
  });
}

// One figure per case, one bar per device.
function metricChart(suite, def, list, devices) {
  const m = def.metric;
  const color = (d) => DEVICE_COLORS[devices.indexOf(d) % DEVICE_COLORS.length];
  const groups = [];
  for (const r of list) {
    let g = groups[groups.length - 1];
    if (!g || g.label !== r.case) groups.push(g = {label: r.case, bars: []});
    g.bars.push({value: r[m.key], color: color(r.device),
      tip: r.case + ', ' + r.device + ': ' + fmtNum(r[m.key]) + ' ' + m.axis});
  }
  return barChart({
    title: suite, sub: m.title,
    legend: devices.map((d) => ({label: d, color: color(d)})),
    groupHead: def.caseHead || 'case', axis: m.axis, groups,
    label: suite + ': ' + m.title + ', one bar per device (' + devices.join(', ') +
      '). The table below has the figures.',
  });
}

// The value axis: linear from zero in round steps, or, when the bars span LOG_SPAN or more,
// logarithmic over whole decades (2 and 5 ticks too when there are few decades).
function valueScale(values, x0, x1) {
  const v = values.filter((x) => num(x) && x > 0);
  if (!v.length) return null;
  const lo = Math.min(...v), hi = Math.max(...v);
  if (hi / lo >= LOG_SPAN) {
    const a = Math.floor(Math.log10(lo)), b = Math.max(Math.ceil(Math.log10(hi)), a + 1);
    const ticks = [];
    for (let e = a; e <= b; e++) {
      for (const m of b - a <= 2 ? [1, 2, 5] : [1]) if (e < b || m === 1) ticks.push(m * Math.pow(10, e));
    }
    return {log: true, ticks, x: (x) => x0 + (Math.log10(x) - a) / (b - a) * (x1 - x0)};
  }
  const mag = Math.pow(10, Math.floor(Math.log10(hi / 4)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s * 4 >= hi);
  const top = Math.ceil(hi / step - 1e-9) * step;
  const ticks = [];
  for (let t = 0; t <= top + step / 2; t += step) ticks.push(Number(t.toPrecision(6)));
  return {log: false, ticks, x: (x) => x0 + x / top * (x1 - x0)};
}

// A horizontal grouped bar chart, sized to its bars: a band per group (a case) with one bar
// per series, the value axis at the bottom, an optional note per band at the right (a ratio)
// and an optional marker above one band (the crossover), with room of its own so it covers
// no bar. Values label their bars; every bar also has a tooltip.
function barChart(o) {
  const BW = 640, BAR = 11, GAP = 2, PADB = 5, MARK = 18;
  const maxLen = Math.max(o.groupHead.length, ...o.groups.map((g) => g.label.length));
  const x0 = Math.min(170, Math.max(50, 16 + maxLen * 7.8));   // 11.5 px bold labels
  const noteW = o.groups.some((g) => g.note) ? 58 : 0;
  const x1 = BW - 14 - noteW;
  const legendY = 50, top = 60;
  let y = top;
  const bands = o.groups.map((g, i) => {
    if (o.mark && o.mark.at === i) y += MARK;
    const b = {y, h: g.bars.length * (BAR + GAP) - GAP + 2 * PADB};
    y += b.h;
    return b;
  });
  const bottom = y, H = bottom + 40;
  const root = svg('svg', {viewBox: '0 0 ' + BW + ' ' + H, class: 'bchart', role: 'img',
    'aria-label': o.label});
  root.append(svg('title', {}, o.label));
  root.append(svg('text', {x: 10, y: 17, class: 'c-title'}, o.title));
  const sub = svg('text', {x: 10, y: 33, class: 'c-sub'}, o.sub);
  if (o.verdict) sub.append(svg('tspan', {class: 'c-verdict ' + (o.verdictClass || '')}, o.verdict));
  root.append(sub);
  // legend, and the heads of the label and note columns, on one line above the bars
  root.append(svg('text', {x: x0 - 8, y: legendY, 'text-anchor': 'end', class: 'c-head'}, o.groupHead));
  let lx = x0;
  for (const s of o.legend) {
    root.append(svg('rect', {x: lx, y: legendY - 8, width: 10, height: 10, rx: 2, fill: s.color}));
    root.append(svg('text', {x: lx + 14, y: legendY, class: 'c-axis'}, s.label));
    lx += 26 + s.label.length * 5.8;
  }
  if (noteW) root.append(svg('text', {x: BW - 10, y: legendY, 'text-anchor': 'end', class: 'c-head'}, o.noteHead));

  const sc = valueScale(o.domain || o.groups.flatMap((g) => g.bars.map((b) => b.value)), x0, x1);
  if (sc) {
    for (const t of sc.ticks) {
      const x = sc.x(t).toFixed(1);
      root.append(svg('line', {x1: x, x2: x, y1: top - 4, y2: bottom, class: 'c-grid'}));
      root.append(svg('text', {x, y: bottom + 13, 'text-anchor': 'middle', class: 'c-axis'}, fmtAxis(t)));
    }
  }
  root.append(svg('line', {x1: x0, x2: x0, y1: top - 4, y2: bottom, class: 'c-base'}));
  root.append(svg('text', {x: (x0 + x1) / 2, y: bottom + 30, 'text-anchor': 'middle',
    class: 'c-axis c-axis-title'}, o.axis + (sc && sc.log ? ' (log scale)' : '')));

  o.groups.forEach((g, i) => {
    const b = bands[i];
    if (i % 2) root.insertBefore(svg('rect', {x: 0, y: b.y, width: BW, height: b.h, class: 'c-band'}), root.children[1]);
    root.append(svg('text', {x: x0 - 8, y: b.y + b.h / 2 + 4, 'text-anchor': 'end',
      class: 'c-label' + (o.mark && o.mark.at === i ? ' c-win' : '')}, g.label));
    g.bars.forEach((bar, k) => {
      const by = b.y + PADB + k * (BAR + GAP);
      const ok = sc && num(bar.value) && bar.value > 0;
      const end = ok ? Math.max(x0 + 1.5, sc.x(bar.value)) : x0;
      const text = num(bar.value) ? fmtAxis(bar.value) : 'n/a';
      if (ok) {
        const r = svg('rect', {x: x0, y: by, width: (end - x0).toFixed(1), height: BAR, fill: bar.color});
        r.append(svg('title', {}, bar.tip));
        root.append(r);
      }
      // the value after the bar, or inside its end when the bar leaves no room after it
      const w = text.length * 5.6 + 4;
      const inside = end + w > x1 + noteW * 0.3 && end - x0 > w + 4;
      root.append(svg('text', {x: (inside ? end - 3 : end + 3).toFixed(1), y: by + BAR - 2,
        'text-anchor': inside ? 'end' : 'start', class: inside ? 'c-val c-val-in' : 'c-val'}, text));
    });
    if (g.note) {
      root.append(svg('text', {x: BW - 10, y: b.y + b.h / 2 + 4, 'text-anchor': 'end',
        class: 'c-note ' + (g.noteClass || '')}, g.note));
    }
  });
  if (o.mark) {
    const my = bands[o.mark.at].y - 1;
    root.append(svg('line', {x1: 4, x2: BW - 4, y1: my, y2: my, class: 'c-mark'}));
    root.append(svg('text', {x: x0 + 4, y: my - 5, class: 'c-mark-text'}, o.mark.text));
  }
  if (!sc) {
    root.append(svg('text', {x: (x0 + x1) / 2, y: (top + bottom) / 2 + 4, 'text-anchor': 'middle',
      class: 'c-axis'}, 'no positive figures to draw'));
  }
  return root;
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
  initForm();
  tokenFromFragment();
  window.addEventListener('hashchange', async () => {
    if (!/^#token=/.test(location.hash)) return;
    tokenFromFragment();
    $('token').value = token();
    await openSession();
    refresh();
  });
  const tok = $('token');
  tok.value = token();
  tok.addEventListener('change', async () => {
    const old = token();
    try { localStorage.setItem(TOKEN_KEY, tok.value.trim()); } catch (_) { /* private mode: this page only */ }
    tok.closest('label').classList.remove('attention');
    st.askedToken = false;
    if (token()) await openSession(); else await closeSession(old);
    refresh();
  });
  $('b-suite').addEventListener('change', (e) => setBenchSuite(e.target.value));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && st.open) closeDetail(); });
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) { clearTimeout(st.timer); st.timer = 0; } else refresh();
  });
  setBenchSuite($('b-suite').value);   // the browser may restore the last suite chosen
  // A stored token (or one from #token=) gets its session first: a cookie from an earlier
  // visit may be gone with the browser's session, or void after a token change.
  openSession().finally(refresh);
}

init();
