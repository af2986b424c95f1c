// barchart.js: the benchmarks' horizontal grouped bar chart as inline SVG: a band per case with
// a bar per series, a value axis that turns logarithmic when the bars span LOG_SPAN or more,
// a note per band (a ratio) and a marker above one band (the crossover).

import {svg} from './dom.js';
import {fmtNum, num} from './format.js';

const LOG_SPAN = 20;        // a log axis once the largest bar is this many times the smallest

// Axis ticks: 2.5k, 128k, 1.5M rather than 2500, 128000, 1500000.
function fmtAxis(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return fmtNum(v / 1e9) + 'G';
  if (a >= 1e6) return fmtNum(v / 1e6) + 'M';
  if (a >= 1e4) return fmtNum(v / 1e3) + 'k';
  return fmtNum(v);
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
export function barChart(o) {
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
