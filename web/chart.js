// chart.js: the detail's line charts: one or more series (training and test loss, say) over the
// same steps as inline SVG, on an axis from zero in round steps (0 to 1 for a fraction), thinned
// to the chart's width so that a long run draws as fast as a short one; marks (the steps where
// epochs end) as dashed vertical lines; a legend with each series' last value. Moving over a
// chart shows a guide at the nearest step and each series' value there; dragging across it zooms
// to that range of steps (the y axis fits what is shown), and a double-click or "Reset zoom"
// shows the whole run again. Each chart smooths its series on request (a moving average, the
// points faint behind it) and draws its y axis on a log scale on request. Hand-drawn SVG rather than a library: these few interactions cost
// less code than a dependency, and a build step to fetch it, would.

import {el, svg} from './dom.js';
import {fmtNum, fmtPct} from './format.js';

const CW = 420, CH = 160;                          // viewBox size
const PAD = {l: 52, r: 12, t: 14, b: 22};          // room for the axes' labels and the marks'
const DOTS_UP_TO = 40;      // a series this sparse (an evaluation every few hundred steps) shows its points
const MARK_GAP = 24;        // marks closer than this (viewBox units) to the last one drawn are left out
const MARK_LABELS = 12;     // past this many marks drawn, their numbers are the tooltip's, not the top's
const DRAG_MIN = 4;         // a drag narrower than this (viewBox units) is a click, not a zoom
const X_TICKS = 5;          // about this many labelled steps along the x axis
const CHAR_W = 6.2;         // about a character's width in the axes' 10.5 px type (viewBox units)
const PW = CW - PAD.l - PAD.r, PH = CH - PAD.t - PAD.b;   // the plot's size
let clips = 0;              // each chart's clip path needs an id of its own

// What the smoothing menu offers: the weight of an exponential moving average (TensorBoard's and
// W&B's, debiased so that the first points are not pulled toward zero); 0 draws the points as
// they are.
const SMOOTHING = [0, 0.6, 0.9, 0.99];

// pts smoothed by weight w: each point the average of those before it, weighted w^age.
function smoothed(pts, w) {
  if (!w) return pts;
  const out = [];
  let acc = 0, norm = 0;
  for (const p of pts) {
    acc = acc * w + p.value * (1 - w);
    norm = norm * w + (1 - w);
    out.push({step: p.step, value: acc / norm});
  }
  return out;
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

// Round steps (1, 2, 5 times a power of ten, whole steps at least), the gap nearest to X_TICKS
// labels over the span.
function xTicks(from, to) {
  const raw = (to - from) / X_TICKS;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const gap = Math.max(1, [1, 2, 5, 10].map((m) => m * mag)
    .reduce((a, b) => Math.abs(Math.log(b / raw)) < Math.abs(Math.log(a / raw)) ? b : a));
  const out = [];
  for (let v = Math.ceil(from / gap) * gap; v <= to; v += gap) out.push(v);
  return out;
}

// The index of the first point at or after step (pts in step order).
function firstAt(pts, step) {
  let lo = 0, hi = pts.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (pts[m].step < step) lo = m + 1; else hi = m; }
  return lo;
}

// The point of pts nearest to step, or null.
function nearest(pts, step) {
  if (!pts.length) return null;
  const i = firstAt(pts, step);
  if (i === 0) return pts[0];
  if (i === pts.length) return pts[i - 1];
  return step - pts[i - 1].step <= pts[i].step - step ? pts[i - 1] : pts[i];
}

// c: {title, unit (a fraction, drawn as a percentage), x (what a step counts: "epoch", "step"),
// series: [{name, label, color, width (the line's, 1.8 unless set)}], legend (false: none, where
// a table beside the chart tells the colours), marks (what a mark ends, "epoch": the tooltip
// names the one a step is part of)}. onZoom(range or null) hears the user zoom (a
// range {from, to} of steps) or reset, so that charts over the same steps can follow.
// Returns {root, update(data, marks, extent), setZoom(range)}: data is series name -> [{step,
// value}] in step order; marks are [{step, label (drawn beside the line), title (its tooltip)}] in
// step order; extent {from, to} (optional) widens the x axis to charts drawn beside this one.
export function makeChart(c, onZoom) {
  const root = el('div', 'chart-box');
  const head = el('div', 'chart-head');
  const legend = el('span', 'chart-legend');
  const reset = el('button', 'chart-reset', 'Reset zoom');
  reset.type = 'button';
  reset.hidden = true;
  reset.title = 'Show every step again (or double-click the chart)';
  // Smoothing (a moving average; the points as they are stay faint behind it) and a log scale
  // (for losses that fall over decades; the points at or below zero are left out).
  const smooth = el('select', 'chart-smooth');
  smooth.title = 'Smoothing: an exponential moving average of the points, weighted 0.6, 0.9 or 0.99';
  smooth.setAttribute('aria-label', c.title + ': smoothing');
  for (const w of SMOOTHING) {
    const o = el('option', null, w ? 'smooth ' + w : 'no smoothing');
    o.value = String(w);
    smooth.append(o);
  }
  const log = el('button', 'chart-log', 'log');
  log.type = 'button';
  log.title = 'Log scale on the y axis';
  log.setAttribute('aria-pressed', 'false');
  head.append(el('span', 'chart-title', c.title), legend, smooth, log, reset);
  const tip = el('div', 'chart-tip');
  tip.hidden = true;
  root.append(head, tip);
  const ch = {c, root, legend, reset, tip, log, svg: null, lines: [], marks: [], extent: null, zoom: null, geo: null,
    hoverX: null, drag: null, onZoom, smooth: 0, logScale: false};
  const zoom = (range) => { ch.zoom = range; render(ch); if (ch.onZoom) ch.onZoom(range); };
  reset.addEventListener('click', () => zoom(null));
  smooth.addEventListener('change', () => { ch.smooth = Number(smooth.value); render(ch); });
  log.addEventListener('click', () => {
    ch.logScale = !ch.logScale;
    log.setAttribute('aria-pressed', String(ch.logScale));
    render(ch);
  });
  listen(ch, zoom);
  return {
    root,
    update(data, marks = [], extent = null) {
      ch.lines = c.series.map((s) => ({...s,
        pts: (data[s.name] || []).filter((p) => typeof p.value === 'number' && isFinite(p.value))}));
      ch.marks = marks;
      ch.extent = extent;
      render(ch);
    },
    setZoom(range) { ch.zoom = range; render(ch); },
  };
}

function render(ch) {
  const {c, marks} = ch;
  // What is drawn: each series smoothed as asked, and on a log scale only its points above zero
  // (the raw points stay in ch.lines for the legend and the faint line behind a smoothed one).
  const positive = ch.lines.some((l) => l.pts.some((p) => p.value > 0));
  ch.log.disabled = !positive;
  const logScale = ch.logScale && positive;
  const keep = (pts) => logScale ? pts.filter((p) => p.value > 0) : pts;
  const lines = ch.lines.map((l) => ({...l, raw: keep(l.pts), pts: keep(smoothed(l.pts, ch.smooth))}));
  const fmt = (v) => c.unit ? fmtPct(v) : fmtNum(v);
  const total = lines.reduce((n, l) => n + l.pts.length, 0);
  const label = c.title + ' per ' + c.x + ': ' + lines.map((l) => {
    const last = l.pts[l.pts.length - 1];
    return l.label + ' ' + l.pts.length + ' points' + (last ? ', last ' + fmt(last.value) + ' at ' +
      c.x + ' ' + last.step : '');
  }).join('; ') + (marks.length ? '; ' + marks.length + ' marks' : '');
  const root = svg('svg', {viewBox: '0 0 ' + CW + ' ' + CH, class: 'chart', role: 'img',
    'aria-label': label, 'data-series': c.series.map((s) => s.name).join(' '), 'data-points': total,
    'data-smooth': String(ch.smooth), 'data-log': String(logScale)});
  if (ch.svg) ch.svg.replaceWith(root); else ch.tip.before(root);
  ch.svg = root;
  ch.geo = null;
  drawLegend(ch, fmt);
  if (!total) {
    ch.reset.hidden = true;
    ch.tip.hidden = true;
    root.append(svg('text', {x: PAD.l + PW / 2, y: PAD.t + PH / 2, 'text-anchor': 'middle',
      class: 'c-axis'}, 'no data'));
    return;
  }

  // The steps shown: every one, or the zoomed range where it still holds points.
  let x0 = Infinity, xn = -Infinity;
  for (const l of lines) {
    if (l.pts.length) { x0 = Math.min(x0, l.pts[0].step); xn = Math.max(xn, l.pts[l.pts.length - 1].step); }
  }
  if (ch.extent && ch.extent.from <= ch.extent.to) {
    x0 = Math.min(x0, ch.extent.from);
    xn = Math.max(xn, ch.extent.to);
  }
  let from = x0, to = Math.max(xn, x0 + 1);
  if (ch.zoom) {
    const a = Math.max(ch.zoom.from, from), b = Math.min(ch.zoom.to, to);
    if (b > a) { from = a; to = b; } else ch.zoom = null;
  }
  ch.reset.hidden = !ch.zoom;
  root.dataset.x0 = String(from);
  root.dataset.x1 = String(to);
  root.dataset.zoomed = String(!!ch.zoom);

  // Each line's points in range, with one beyond each side so that a line runs to the edge; the
  // y axis fits the points in range (those beside them where a range falls between points).
  const shown = lines.map((l) => {
    const a = Math.max(0, firstAt(l.pts, from) - 1), b = Math.min(l.pts.length, firstAt(l.pts, to + 1e-9) + 1);
    return l.pts.slice(a, b);
  });
  let lo = Infinity, hi = -Infinity;
  for (const pts of shown) {
    for (const p of pts) {
      if (p.step < from || p.step > to) continue;
      if (p.value < lo) lo = p.value;
      if (p.value > hi) hi = p.value;
    }
  }
  if (lo > hi) for (const pts of shown) for (const p of pts) { lo = Math.min(lo, p.value); hi = Math.max(hi, p.value); }
  let Y, yTicks;
  if (logScale) {                             // whole decades around what is shown
    const d0 = Math.floor(Math.log10(lo)), d1 = Math.max(d0 + 1, Math.ceil(Math.log10(hi)));
    const every = Math.ceil((d1 - d0) / 4);
    Y = (v) => PAD.t + (1 - (Math.log10(v) - d0) / (d1 - d0)) * PH;
    yTicks = [];
    for (let d = d0; d <= d1; d += every) yTicks.push(Number('1e' + d));
  } else {
    if (c.unit && lo >= 0 && hi <= 1) { lo = 0; hi = 1; }
    else {
      if (lo > 0) lo = 0;                     // losses read best against zero
      if (lo === 0 && hi > 0) hi = niceCeil(hi);
      if (hi === lo) hi = lo + 1;
    }
    Y = (v) => PAD.t + (1 - (v - lo) / (hi - lo)) * PH;
    yTicks = [lo, (lo + hi) / 2, hi];
  }
  const X = (v) => PAD.l + (v - from) / (to - from) * PW;
  ch.geo = {from, to, X, Y, shown};

  for (const v of yTicks) {
    const y = Y(v).toFixed(1);
    root.append(svg('line', {x1: PAD.l, x2: CW - PAD.r, y1: y, y2: y, class: 'c-grid'}));
    root.append(svg('text', {x: PAD.l - 6, y: Number(y) + 4, 'text-anchor': 'end', class: 'c-axis c-ytick'},
      c.unit && hi <= 1 && !logScale ? fmtPct(v) : fmtNum(v)));
  }
  // A step's label under its tick, unless it would run into the axis's name on the left (an inet
  // job's steps are interactions: six digits and more); one at the right edge ends at the edge.
  const nameEnd = 4 + (c.x.length + 1) * CHAR_W;
  for (const v of xTicks(from, to)) {
    const x = X(v), label = String(v), half = label.length * CHAR_W / 2;
    root.append(svg('line', {x1: x.toFixed(1), x2: x.toFixed(1), y1: PAD.t + PH, y2: PAD.t + PH + 3, class: 'c-tick'}));
    if (x - half < nameEnd) continue;
    const atEdge = x + half > CW - 1;
    root.append(svg('text', {x: atEdge ? CW - 1 : x.toFixed(1), y: CH - 6, 'text-anchor': atEdge ? 'end' : 'middle',
      class: 'c-axis c-xtick'}, label));
  }
  root.append(svg('text', {x: 4, y: CH - 6, class: 'c-axis c-xname'}, c.x));

  const id = 'chart-clip-' + (++clips);
  const clip = svg('clipPath', {id});
  clip.append(svg('rect', {x: PAD.l, y: PAD.t - 4, width: PW, height: PH + 8}));
  const defs = svg('defs', {});
  defs.append(clip);
  root.append(defs);
  let lastMark = -Infinity;
  const drawnMarks = [];
  for (const m of marks) {
    if (m.step < from || m.step > to) continue;
    const x = X(m.step);
    if (x - lastMark < MARK_GAP) continue;
    lastMark = x;
    drawnMarks.push([m, x]);
  }
  drawnMarks.forEach(([m, x], i) => {
    const line = svg('line', {x1: x.toFixed(1), x2: x.toFixed(1), y1: PAD.t, y2: PAD.t + PH, stroke: '#b6bec8',
      'stroke-dasharray': '3 3', 'data-mark': m.step});
    line.append(svg('title', {}, m.title || m.label));
    root.append(line);
    // Beside its line; on its left at the right edge, unless the mark before is too close.
    const left = x > CW - PAD.r - 16;
    if (drawnMarks.length <= MARK_LABELS && !(left && i && x - drawnMarks[i - 1][1] < 2 * MARK_GAP)) {
      root.append(svg('text', {x: (left ? x - 3 : x + 3).toFixed(1), y: PAD.t + 9, class: 'c-axis',
        'text-anchor': left ? 'end' : 'start'}, m.label));
    }
  });
  const pathOf = (pts) => {
    const drawn = thin(pts, PW);
    let d = '';
    for (let i = 0; i < drawn.length; i++) d += (i ? 'L' : 'M') + X(drawn[i].step).toFixed(1) + ' ' + Y(drawn[i].value).toFixed(1);
    return d;
  };
  lines.forEach((l, k) => {
    const pts = shown[k];
    if (!pts.length) return;
    if (ch.smooth) {                          // the points as they are, faint behind the average
      const a = Math.max(0, firstAt(l.raw, from) - 1), b = Math.min(l.raw.length, firstAt(l.raw, to + 1e-9) + 1);
      root.append(svg('path', {d: pathOf(l.raw.slice(a, b)), fill: 'none', stroke: l.color, 'stroke-width': 1,
        'stroke-opacity': 0.25, 'vector-effect': 'non-scaling-stroke', 'data-raw': l.name, 'clip-path': 'url(#' + id + ')'}));
    }
    const dpath = pathOf(pts);
    root.append(svg('path', {d: dpath, fill: 'none', stroke: l.color, 'stroke-width': l.width || 1.8,
      'stroke-linejoin': 'round', 'vector-effect': 'non-scaling-stroke', 'data-series': l.name,
      'data-points': l.pts.length, 'clip-path': 'url(#' + id + ')'}));
    const last = l.pts[l.pts.length - 1];
    const inRange = pts.filter((p) => p.step >= from && p.step <= to);
    for (const p of inRange.length <= DOTS_UP_TO ? inRange : inRange.includes(last) ? [last] : []) {
      root.append(svg('circle', {cx: X(p.step).toFixed(1), cy: Y(p.value).toFixed(1),
        r: p === last ? 3 : 2, fill: l.color}));
    }
  });
  const hover = svg('g', {class: 'c-hover', display: 'none'});
  hover.append(svg('line', {class: 'c-guide', y1: PAD.t, y2: PAD.t + PH}));
  for (const l of lines) hover.append(svg('circle', {r: 3.5, fill: '#fff', stroke: l.color, 'stroke-width': 2}));
  const select = svg('rect', {class: 'c-select', y: PAD.t, height: PH, display: 'none'});
  root.append(hover, select);
  ch.hover = hover;
  ch.select = select;
  if (ch.hoverX != null) showHover(ch, ch.hoverX);
  else ch.tip.hidden = true;
}

// Keys beyond which a legend is laid out as a grid (compared runs: a job alone has 3 at most).
const LEGEND_MANY = 4;

// Beside the title, per series: a swatch, its name and its last value.
function drawLegend(ch, fmt) {
  ch.legend.textContent = '';
  if (ch.c.legend === false) return;
  for (const l of ch.lines) {
    const last = l.pts[l.pts.length - 1];
    const item = el('span', 'chart-key');
    item.dataset.series = l.name;
    const sw = el('span', 'swatch');
    sw.style.background = l.color;
    item.append(sw, el('span', null, l.label + ' '), el('b', null, last ? fmt(last.value) : '\u2014'));
    ch.legend.append(item);
  }
  // many keys (compared runs): a grid across the box's width under the title, not a column
  ch.legend.classList.toggle('many', ch.lines.length > LEGEND_MANY);
}

// Where a pointer event falls in the chart's viewBox, or null off the chart.
function toViewBox(ch, ev) {
  if (!ch.svg || !ch.geo) return null;
  const r = ch.svg.getBoundingClientRect();
  if (!r.width || !r.height) return null;
  return {x: (ev.clientX - r.left) / r.width * CW, y: (ev.clientY - r.top) / r.height * CH};
}

const inPlot = (p) => p && p.x >= PAD.l && p.x <= PAD.l + PW && p.y >= PAD.t - 4 && p.y <= PAD.t + PH + 4;
const clampX = (x) => Math.min(PAD.l + PW, Math.max(PAD.l, x));
const stepAt = (g, x) => g.from + (clampX(x) - PAD.l) / PW * (g.to - g.from);

// The guide at the step nearest to x (viewBox units) among every series' points in range, a dot
// on each series' nearest point, and their values in the tooltip.
function showHover(ch, x) {
  const g = ch.geo;
  if (!g) return;
  const at = stepAt(g, x);
  let best = null;
  for (const pts of g.shown) {
    const p = nearest(pts.filter((q) => q.step >= g.from && q.step <= g.to), at);
    if (p && (!best || Math.abs(p.step - at) < Math.abs(best.step - at))) best = p;
  }
  if (!best) { hideHover(ch); return; }
  const fmt = (v) => ch.c.unit ? fmtPct(v) : fmtNum(v);
  const gx = g.X(best.step);
  const [guide, ...dots] = ch.hover.children;
  guide.setAttribute('x1', gx.toFixed(1));
  guide.setAttribute('x2', gx.toFixed(1));
  ch.hover.setAttribute('display', 'inline');
  const tip = ch.tip;
  tip.textContent = '';
  tip.dataset.step = String(best.step);
  // The mark a step comes before names it too: the epoch a step is part of.
  const mark = ch.c.marks && ch.marks[firstAt(ch.marks, best.step)];
  tip.append(el('div', 'tip-x', ch.c.x + ' ' + best.step + (mark ? ' \u00b7 ' + ch.c.marks + ' ' + mark.label : '')));
  ch.lines.forEach((l, k) => {
    const p = nearest(g.shown[k].filter((q) => q.step >= g.from && q.step <= g.to), best.step);
    dots[k].setAttribute('display', p ? 'inline' : 'none');
    if (!p) return;
    dots[k].setAttribute('cx', g.X(p.step).toFixed(1));
    dots[k].setAttribute('cy', g.Y(p.value).toFixed(1));
    const row = el('div', 'tip-row');
    row.dataset.series = l.name;
    const sw = el('span', 'swatch');
    sw.style.background = l.color;
    row.append(sw, el('span', null, l.label + ' '), el('b', null, fmt(p.value)));
    if (p.step !== best.step) row.append(el('span', 'muted', ' (' + ch.c.x + ' ' + p.step + ')'));
    tip.append(row);
  });
  tip.hidden = false;
  // Right of the guide where it fits in the chart, else left of it, else on the side with more
  // room (over the chart beside, never over the guide); placed in the box's pixels.
  const r = ch.svg.getBoundingClientRect(), box = ch.root.getBoundingClientRect();
  const px = r.left - box.left + gx / CW * r.width, w = tip.offsetWidth;
  const right = px + 10 + w <= box.width || (px - 10 - w < 0 && px < box.width / 2);
  tip.style.left = (right ? px + 10 : Math.max(2 - box.left, px - 10 - w)) + 'px';
  tip.style.top = (r.top - box.top + PAD.t / CH * r.height + 4) + 'px';
}

function hideHover(ch) {
  if (ch.hover) ch.hover.setAttribute('display', 'none');
  ch.tip.hidden = true;
}

// Pointer handling, on the box (the SVG is replaced at each redraw): hover, drag to zoom,
// double-click to reset.
function listen(ch, zoom) {
  const box = ch.root;
  box.addEventListener('pointermove', (ev) => {
    const p = toViewBox(ch, ev);
    if (ch.drag) {
      ch.drag.b = clampX(p ? p.x : ch.drag.b);
      const a = Math.min(ch.drag.a, ch.drag.b), w = Math.abs(ch.drag.b - ch.drag.a);
      ch.select.setAttribute('x', a.toFixed(1));
      ch.select.setAttribute('width', w.toFixed(1));
      ch.select.setAttribute('display', w >= DRAG_MIN ? 'inline' : 'none');
      return;
    }
    if (inPlot(p)) { ch.hoverX = p.x; showHover(ch, p.x); } else { ch.hoverX = null; hideHover(ch); }
  });
  box.addEventListener('pointerleave', () => { if (!ch.drag) { ch.hoverX = null; hideHover(ch); } });
  box.addEventListener('pointerdown', (ev) => {
    const p = toViewBox(ch, ev);
    if (ev.button !== 0 || !inPlot(p)) return;
    ch.drag = {a: p.x, b: p.x};
    box.setPointerCapture(ev.pointerId);
    ev.preventDefault();                      // no text selection while dragging
  });
  const end = (ev) => {
    const d = ch.drag, g = ch.geo;
    if (!d) return;
    ch.drag = null;
    if (ch.select) ch.select.setAttribute('display', 'none');
    const p = toViewBox(ch, ev);
    if (p) d.b = clampX(p.x);
    if (!g || Math.abs(d.b - d.a) < DRAG_MIN) return;
    let from = stepAt(g, Math.min(d.a, d.b)), to = stepAt(g, Math.max(d.a, d.b));
    if (to - from < 1) { const mid = (from + to) / 2; from = mid - 0.5; to = mid + 0.5; }
    ch.hoverX = null;
    zoom({from, to});
  };
  box.addEventListener('pointerup', end);
  box.addEventListener('pointercancel', () => {
    ch.drag = null;
    if (ch.select) ch.select.setAttribute('display', 'none');
  });
  box.addEventListener('dblclick', (ev) => {
    if (!inPlot(toViewBox(ch, ev))) return;
    if (ch.zoom) zoom(null);
  });
}
