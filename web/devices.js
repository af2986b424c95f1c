// devices.js: the Devices panel: a card per device with its figures, and its utilisation over
// the last hour (since paragond started, if sooner) as bars, from the history paragond keeps
// (GET /api/v1/devices/utilisation: busy seconds per 5 s interval), so that a fresh tab shows it
// at once. Redrawn only when what it shows has changed.

import {API, getJSON} from './api.js';
import {$, el, svg} from './dom.js';
import {fmtBytes, fmtClock, fmtNum, fmtPct} from './format.js';

let drawnKey = '';          // the last devices drawn, to skip identical redraws
let lastDevices = [];       // the devices last drawn, drawn again when the history comes

// The history as last fetched: asked again at a refresh once an interval has passed, or when a
// device's busy_seconds (in every /devices answer) has grown since, so that a job shows at once.
const BARS = 60;            // at most this many bars: an hour of 5 s intervals is 1 min a bar
const hist = {at: 0, busy: false, interval: 5, last: 0, devices: new Map(),   // id -> busy seconds[]
  counters: ''};            // the devices' busy_seconds when it was asked for

function fetchHistory(devices) {
  const counters = devices.map((d) => d.busy_seconds).join();
  if (hist.busy || (counters === hist.counters && Date.now() - hist.at < hist.interval * 1000)) return;
  hist.busy = true;
  hist.counters = counters;
  getJSON(API + '/devices/utilisation').then((u) => {
    hist.at = Date.now();
    if (u.interval_seconds > 0) hist.interval = u.interval_seconds;
    hist.last = typeof u.last_interval_seconds === 'number' ? u.last_interval_seconds : 0;
    hist.devices = new Map((Array.isArray(u.devices) ? u.devices : [])
      .filter((d) => Array.isArray(d.busy_seconds)).map((d) => [d.id, d.busy_seconds]));
    drawDevices(lastDevices);
  }).catch(() => { /* the refresh loop's banner tells of an unreachable server; asked again next time */ })
    .finally(() => { hist.busy = false; });
}

// Bars of busy fractions, oldest first, each the time-weighted share of up to a minute's
// intervals, with the seconds it covers and when it ends (seconds before the fetch); the last
// interval counts for the part of it passed.
function utilOf(id) {
  const busy = hist.devices.get(id);
  if (!busy || !busy.length) return null;
  const n = busy.length, iv = hist.interval;
  const len = (k) => k === n - 1 ? hist.last : iv;
  const span = iv * (n - 1) + hist.last;
  if (!(span > 0)) return null;
  const per = Math.ceil(n / BARS);
  const bars = [];
  for (let end = n; end > 0; end -= per) {           // from now back: the first bar may be short
    let b = 0, t = 0;
    for (let k = Math.max(0, end - per); k < end; k++) { b += busy[k]; t += len(k); }
    const ago = end === n ? 0 : hist.last + (n - 1 - end) * iv;   // its end, in seconds before now
    if (t > 0) bars.unshift({v: Math.min(1, Math.max(0, b / t)), ago, t});
  }
  const total = Math.min(1, Math.max(0, busy.reduce((s, b) => s + b, 0) / span));
  return {bars, total, span, per};
}

const spanText = (s) => s < 90 ? Math.max(1, Math.round(s)) + ' s' : Math.round(s / 60) + ' min';

// The bars over the time they cover (now at the right), and under them how far back they go.
function utilChart(id) {
  const u = utilOf(id);
  const W = 240, H = 26;
  const label = u ? 'utilisation ' + fmtPct(u.total) + ' over the last ' + spanText(u.span)
    : 'utilisation: loading';
  const root = el('div', 'util-box');
  const chart = svg('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'util', role: 'img', 'aria-label': label,
    preserveAspectRatio: 'none', 'data-intervals': u ? hist.devices.get(id).length : 0});
  chart.append(svg('title', {}, label));
  root.append(chart);
  if (u) {
    let x = 0;
    for (const b of u.bars) {
      const w = b.t / u.span * W, h = b.v > 0 ? Math.max(1, b.v * H) : 0;
      const bar = svg('rect', {x: x.toFixed(2), y: (H - h).toFixed(2), width: Math.max(0.3, w - 0.4).toFixed(2),
        height: h.toFixed(2), class: 'util-bar'});
      x += w;
      bar.append(svg('title', {}, fmtPct(b.v) + ' busy in the ' + spanText(b.t) + ' to ' +
        new Date(hist.at - b.ago * 1000).toLocaleTimeString()));
      chart.append(bar);
    }
    const axis = el('div', 'util-axis small muted');
    axis.append(el('span', null, spanText(u.span) + ' ago'), el('span', null, 'now'));
    root.append(axis);
  }
  return {root, text: u ? fmtPct(u.total) + ', last ' + spanText(u.span) : 'loading\u2026'};
}

// The paragond nodes on the store (GET /api/v1/nodes): one on SQLite; a cluster's each, with
// when it was last heard from and the jobs it runs. A node not heard from for a minute is marked.
const SILENT_S = 60;
export function renderNodes(nodes) {
  const box = $('nodes');
  box.textContent = '';
  if (!nodes.length) return;
  box.append(nodes.length > 1 ? 'Nodes on this store: ' : 'Node: ');
  nodes.forEach((n, i) => {
    const age = Number(n.heartbeat_age_s) || 0;
    const item = el('span', 'node' + (age > SILENT_S ? ' silent' : ''));
    item.dataset.id = n.id || '';
    const running = Array.isArray(n.running) && n.running.length
      ? ', running ' + n.running.map((j) => '#' + j).join(' ') : '';
    item.append(el('strong', null, n.id || '?'), ' ' + (n.address || '') +
      ' (heard ' + (age < 1 ? 'now' : Math.round(age) + ' s ago') + running + ')');
    item.title = (n.devices || []).map((d) => d.id).join(', ');
    if (i) box.append(' \u00b7 ');
    box.append(item);
  });
}

export function renderDevices(devices) {
  fetchHistory(devices);
  drawDevices(devices);
}

// The device profile's kernel family and GEMM tile, each with where it came from (a tuning, an
// override), and the tuned tile's figure, for the card: "cpu family, GEMM 8x32 (tuning, 41 GFLOP/s)".
function kernelsText(p) {
  if (!p) return '\u2014';
  if (p.class === 'host') return 'host reference (C)';
  const fam = p.families && p.families.gemm;
  const from = (f, extra) => {
    const parts = [f && f !== 'default' ? f : '', extra || ''].filter(Boolean);
    return parts.length ? ' (' + parts.join(', ') + ')' : '';
  };
  const figure = p.gemm && p.gemm.gflops > 0 ? fmtNum(p.gemm.gflops) + ' GFLOP/s' : '';
  const groups = Object.entries(p.families || {});
  const mixed = groups.some(([, f]) => f.family !== (fam && fam.family));
  const families = mixed ? groups.map(([g, f]) => g + ' ' + f.family + from(f.from)).join(', ')
    : fam ? fam.family + ' family' + from(fam.from) : '?';
  return families +
    (p.gemm ? ', GEMM ' + p.gemm.tile + from(p.gemm.from, figure) : '');
}

function drawDevices(devices) {
  lastDevices = devices;
  const key = JSON.stringify(devices.map((d) => ({...d, busy_seconds: undefined}))) + hist.at;
  if (key === drawnKey) return;
  drawnKey = key;
  const box = $('devices');
  box.textContent = '';
  if (!devices.length) { box.append(el('p', 'muted', 'No devices reported.')); return; }
  for (const d of devices) {
    const card = el('article', 'device');
    card.dataset.id = d.id || '';
    const h = el('h3', null, d.name || d.id || '?');
    h.title = d.name || '';
    card.append(h);
    const sub = el('div', 'device-sub');
    sub.append(el('span', 'badge type', d.type || '?'), el('code', null, d.id || ''));
    card.append(sub);
    // every job running there (a device may run several: --jobs-per-device)
    const ids = Array.isArray(d.running_jobs) ? d.running_jobs
      : d.running_job == null ? [] : [typeof d.running_job === 'object' ? d.running_job.id : d.running_job];
    const running = ids.length ? ids.map((id) => 'job #' + id).join(', ') : 'idle';
    const dl = el('dl');
    const rows = [
      ['Compute units', d.compute_units != null ? String(d.compute_units) : '\u2014'],
      ['Memory', d.global_mem_bytes ? fmtBytes(d.global_mem_bytes) : '—'],
      ['Clock', fmtClock(d.max_clock_mhz)],
      ['Kernels', kernelsText(d.profile)],
      ['Queued', d.queued != null ? String(d.queued) : '\u2014'],
      ['Running', d.jobs_at_once > 1 && ids.length ? running + ' (' + ids.length + ' of ' + d.jobs_at_once + ' at once)' : running],
    ];
    for (const [k, v] of rows) {
      const dd = el('dd', k === 'Running' && d.running_job != null ? 'busy' : null, v);
      dl.append(el('dt', null, k), dd);
    }
    const u = utilChart(d.id);
    dl.append(el('dt', null, 'Utilisation'), el('dd', 'util-cell', u.text));
    card.append(dl, u.root);
    const extra = [d.vendor, d.platform, d.opencl_c_version,
      d.driver_version ? 'driver ' + d.driver_version : ''].filter(Boolean).join(' \u00b7 ');
    if (extra) card.append(el('p', 'device-extra', extra));
    box.append(card);
  }
}
