// devices.js: the Devices panel: a card per device with its figures, and its utilisation over
// the last minutes as a sparkline sampled from the busy_seconds counters at each refresh.
// Redrawn only when what it shows has changed.

import {$, el, svg} from './dom.js';
import {fmtBytes, fmtClock, fmtPct} from './format.js';

let drawnKey = '';          // the last devices drawn, to skip identical redraws

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

export function renderDevices(devices) {
  sampleUtil(devices);
  const key = JSON.stringify(devices.map((d) => ({...d, busy_seconds: undefined}))) +
    JSON.stringify([...util.keys()].map((k) => utilOf(k).parts.length));
  if (key === drawnKey) return;
  drawnKey = key;
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

