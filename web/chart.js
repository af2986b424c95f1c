// chart.js: the job detail's line chart: one or more series (training loss and validation loss,
// say) over the same steps as inline SVG, with a legend that carries each series' last value, on
// an axis from zero in round steps (0 to 1 for a fraction), thinned to the chart's width so that
// a long run draws as fast as a short one; marks (the steps where epochs end, say) as dashed
// vertical lines.

import {svg} from './dom.js';
import {fmtNum, fmtPct} from './format.js';

const CW = 420, CH = 170;                          // viewBox size
const PAD = {l: 52, r: 12, t: 24, b: 24};          // room for axis labels and the title
const DOTS_UP_TO = 40;      // a series this sparse (an evaluation every few hundred steps) shows its points
const MARK_GAP = 24;        // marks closer than this (viewBox units) to the last one drawn are left out

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

// c: {title, unit (a fraction, drawn as a percentage), x (what a step counts: "epoch", "step"),
// series: [{name, label, color, width (the line's, 1.8 unless set)}], legend (false: none, where
// a table beside the chart tells the colours)}; data: series name -> [{step, value}] in step
// order; marks: [{step, label (drawn beside the line), title (its tooltip)}] in step order.
export function lineChart(c, data, marks = []) {
  const lines = c.series.map((s) => ({...s,
    pts: (data[s.name] || []).filter((p) => typeof p.value === 'number' && isFinite(p.value))}));
  const fmt = (v) => c.unit ? fmtPct(v) : fmtNum(v);
  const total = lines.reduce((n, l) => n + l.pts.length, 0);
  const label = c.title + ' per ' + c.x + ': ' + lines.map((l) => {
    const last = l.pts[l.pts.length - 1];
    return l.label + ' ' + l.pts.length + ' points' + (last ? ', last ' + fmt(last.value) + ' at ' +
      c.x + ' ' + last.step : '');
  }).join('; ') + (marks.length ? '; ' + marks.length + ' marks' : '');
  const root = svg('svg', {viewBox: '0 0 ' + CW + ' ' + CH, class: 'chart', role: 'img',
    'aria-label': label, 'data-series': c.series.map((s) => s.name).join(' '), 'data-points': total});
  root.append(svg('title', {}, label));
  root.append(svg('text', {x: PAD.l, y: 15, class: 'c-title'}, c.title));
  if (c.legend !== false) root.append(legend(lines, fmt));
  const w = CW - PAD.l - PAD.r, h = CH - PAD.t - PAD.b;
  if (!total) {
    root.append(svg('text', {x: PAD.l + w / 2, y: PAD.t + h / 2, 'text-anchor': 'middle',
      class: 'c-axis'}, 'no data'));
    return root;
  }
  let lo = Infinity, hi = -Infinity, x0 = Infinity, xn = -Infinity;
  for (const l of lines) {
    for (const p of l.pts) { if (p.value < lo) lo = p.value; if (p.value > hi) hi = p.value; }
    if (l.pts.length) { x0 = Math.min(x0, l.pts[0].step); xn = Math.max(xn, l.pts[l.pts.length - 1].step); }
  }
  if (c.unit && lo >= 0 && hi <= 1) { lo = 0; hi = 1; }
  else {
    if (lo > 0) lo = 0;                       // losses read best against zero
    if (lo === 0 && hi > 0) hi = niceCeil(hi);
    if (hi === lo) hi = lo + 1;
  }
  const x1 = Math.max(xn, x0 + 1);
  const X = (v) => PAD.l + (v - x0) / (x1 - x0) * w;
  const Y = (v) => PAD.t + (1 - (v - lo) / (hi - lo)) * h;
  for (const v of [lo, (lo + hi) / 2, hi]) {
    const y = Y(v).toFixed(1);
    root.append(svg('line', {x1: PAD.l, x2: CW - PAD.r, y1: y, y2: y, class: 'c-grid'}));
    root.append(svg('text', {x: PAD.l - 6, y: Number(y) + 4, 'text-anchor': 'end', class: 'c-axis'},
      c.unit && hi <= 1 ? fmtPct(v) : fmtNum(v)));
  }
  root.append(svg('text', {x: PAD.l, y: CH - 6, class: 'c-axis'}, String(x0)));
  root.append(svg('text', {x: CW - PAD.r, y: CH - 6, 'text-anchor': 'end', class: 'c-axis'}, String(xn)));
  root.append(svg('text', {x: PAD.l + w / 2, y: CH - 6, 'text-anchor': 'middle', class: 'c-axis'}, c.x));
  let lastMark = -Infinity;
  for (const m of marks) {
    if (m.step < x0 || m.step > x1) continue;
    const x = X(m.step);
    if (x - lastMark < MARK_GAP) continue;
    lastMark = x;
    const line = svg('line', {x1: x.toFixed(1), x2: x.toFixed(1), y1: PAD.t, y2: PAD.t + h, stroke: '#b6bec8',
      'stroke-dasharray': '3 3', 'data-mark': m.step});
    line.append(svg('title', {}, m.title || m.label));
    root.append(line, svg('text', {x: (x + 3).toFixed(1), y: PAD.t + 10, class: 'c-axis'}, m.label));
  }
  for (const l of lines) {
    if (!l.pts.length) continue;
    const drawn = thin(l.pts, w);
    let dpath = '';
    for (let i = 0; i < drawn.length; i++) {
      dpath += (i ? 'L' : 'M') + X(drawn[i].step).toFixed(1) + ' ' + Y(drawn[i].value).toFixed(1);
    }
    root.append(svg('path', {d: dpath, fill: 'none', stroke: l.color, 'stroke-width': l.width || 1.8,
      'stroke-linejoin': 'round', 'vector-effect': 'non-scaling-stroke', 'data-series': l.name,
      'data-points': l.pts.length}));
    const dots = l.pts.length <= DOTS_UP_TO ? l.pts : [l.pts[l.pts.length - 1]];
    for (const p of dots) {
      root.append(svg('circle', {cx: X(p.step).toFixed(1), cy: Y(p.value).toFixed(1),
        r: p === l.pts[l.pts.length - 1] ? 3 : 2, fill: l.color}));
    }
  }
  return root;
}

// Right of the title, right-aligned: a swatch, the series' name and its last value per series.
function legend(lines, fmt) {
  const g = svg('text', {x: CW - PAD.r, y: 15, class: 'c-legend', 'text-anchor': 'end'});
  lines.forEach((l, i) => {
    const last = l.pts[l.pts.length - 1];
    g.append(svg('tspan', {fill: l.color, class: 'c-swatch', dx: i ? 10 : 0}, '\u2014 '));
    g.append(svg('tspan', {}, l.label + ' '));
    g.append(svg('tspan', {fill: l.color, class: 'c-last'}, last ? fmt(last.value) : '\u2014'));
  });
  return g;
}
