// chart.js: the job detail's line chart: one series (loss or accuracy) per step as inline SVG,
// on an axis from zero in round steps (0 to 1 for a fraction), thinned to the chart's width so
// that a long run draws as fast as a short one.

import {svg} from './dom.js';
import {fmtNum, fmtPct} from './format.js';

const CW = 420, CH = 170;                          // viewBox size
const PAD = {l: 52, r: 12, t: 24, b: 24};          // room for axis labels and the title

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

// s: {name, label, color, unit (a fraction, drawn as a percentage)}; raw: [{step, value}].
export function lineChart(s, raw) {
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

