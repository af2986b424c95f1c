// ranks.js: a distributed train job's ranks on its detail: a line with the algorithm, the ranks,
// DiLoCo's inner steps and the share of the time spent communicating; each rank's loss curve;
// and a table of each rank's device, loss, syncs, bytes sent, and seconds moving data and waiting
// for the other ranks. Live from the ranks' metrics (rankR.loss, ...) while the job runs; from
// result.distributed once it has one.

import {TERMINAL} from './api.js';
import {makeChart} from './chart.js';
import {el, setAttr, setText} from './dom.js';
import {fmtBytes, fmtDur, fmtNum, fmtPct, fmtQty, num} from './format.js';
import {jobDuration} from './jobrow.js';

// Each rank's figures, per epoch, as paragond records them: "rank<R>.<figure>".
const FIGURES = ['loss', 'syncs', 'bytes_sent', 'comm_seconds', 'wait_seconds'];
const metric = (rank, figure) => 'rank' + rank + '.' + figure;

// A colour per rank's curve, the swatch beside its row: the table is the chart's legend. Past as
// many ranks as colours the curves could not be told apart, so the chart draws the first ones.
const COLORS = ['#1d4ed8', '#c2410c', '#15803d', '#7c3aed', '#b45309', '#0e7490', '#be185d', '#4d7c0f'];

const ALGORITHMS = {ddp: 'DDP', diloco: 'DiLoCo'};

// The spec's distributed object, or null for a job on one process.
function distributedOf(spec) {
  const d = spec && spec.distributed;
  return d && typeof d === 'object' && Number.isInteger(d.ranks) && d.ranks > 0 ? d : null;
}

// The metric names the detail reads for a job's ranks; none for a job on one process.
export function rankMetrics(spec) {
  const d = distributedOf(spec);
  if (!d) return [];
  return Array.from({length: d.ranks}, (_, r) => FIGURES.map((f) => metric(r, f))).flat();
}

// The last point of a series with a finite value, or null.
function latest(series, name) {
  const pts = series[name] || [];
  for (let i = pts.length - 1; i >= 0; i--) if (num(pts[i].value)) return pts[i];
  return null;
}

// A rank's bytes_sent, comm_seconds or wait_seconds: its result's (per_rank) when there is one,
// else the latest point of its metric; NaN before either.
function rankFigure(fin, series, rank, name) {
  if (fin && num(fin[name])) return fin[name];
  const pt = latest(series, metric(rank, name));
  return pt ? pt.value : NaN;
}

const SHARE_OF = 'its share of the running time so far (from the result: of the time since the ranks met)';

// The table's columns after the rank's own: [key, heading, what it counts (the heading's tooltip)].
function columnsFor(algorithm) {
  return [
    ['device', 'Device', 'The device this rank trained on (known once the job has its result)'],
    ['loss', 'Loss', 'This rank\'s training loss on its own data, latest epoch'],
    algorithm === 'diloco'
      ? ['syncs', 'Outer steps', 'DiLoCo\'s outer steps so far: each averages the ranks\' weights']
      : ['syncs', 'Syncs', 'Collectives that summed the ranks\' gradients so far: one per step'],
    ['sent', 'Bytes sent', 'Bytes this rank sent to the others so far'],
    ['comm', 'Moving data', 'Time this rank spent in collectives moving weights or gradients so far, and ' +
      SHARE_OF],
    ['wait', 'Waiting', 'Time this rank spent waiting for the slowest rank to reach a collective so far, and ' +
      SHARE_OF],
  ];
}

// The section for a job whose spec has `distributed`, or null; the detail calls
// update(job, series) whenever it draws, series being its metric name -> points in step order.
export function ranksPanel(spec) {
  const dist = distributedOf(spec);
  if (!dist) return null;
  const root = el('section', 'ranks');
  root.id = 'ranks';
  root.setAttribute('aria-labelledby', 'ranks-h');
  const head = el('h4', null, 'Ranks');
  head.id = 'ranks-h';
  const summary = el('p', 'ranks-summary small');
  summary.id = 'ranks-summary';
  const body = el('div', 'ranks-body');
  const chart = el('div', 'ranks-chart');
  const wrap = el('div', 'table-wrap');
  const table = el('table', 'rank-table figures');
  table.id = 'ranks-table';
  const caption = el('caption', 'sr-only', 'Each rank of this job: its device, latest training loss, ' +
    (dist.algorithm === 'diloco' ? 'outer steps' : 'syncs') + ', bytes sent, and time moving data and ' +
    'waiting for the other ranks with its share of the time. The swatch beside a rank is the colour ' +
    'of its curve in the chart.');
  const columns = columnsFor(dist.algorithm);
  const thead = el('thead');
  const hr = el('tr');
  const th = (text, title, cls) => {
    const h = el('th', cls, text);
    h.scope = 'col';
    if (title) h.title = title;
    return h;
  };
  hr.append(th('Rank'));
  for (const [key, text, title] of columns) hr.append(th(text, title, key === 'device' ? null : 'num'));
  thead.append(hr);
  const tbody = el('tbody');
  const rows = [];
  for (let r = 0; r < dist.ranks; r++) {
    const tr = el('tr');
    tr.dataset.rank = String(r);
    const rank = el('th');      // its number beside the swatch of its curve
    rank.scope = 'row';
    if (r < COLORS.length) {
      const sw = el('span', 'swatch');
      sw.style.background = COLORS[r];
      sw.setAttribute('aria-hidden', 'true');
      rank.append(sw);
    }
    rank.append(document.createTextNode(String(r)));
    const cells = {};
    tr.append(rank);
    for (const [key] of columns) {
      cells[key] = el('td', key === 'device' ? 'r-device' : 'num', '\u2014');
      tr.append(cells[key]);
    }
    tbody.append(tr);
    rows.push(cells);
  }
  table.append(caption, thead, tbody);
  wrap.append(table);
  body.append(wrap, chart);
  root.append(head, summary, body);
  const p = {dist, summary, chart, rows, drawn: ''};
  return {root, update(job, series) { draw(p, job, series); }};
}

function draw(p, j, series) {
  const res = j.result && typeof j.result.distributed === 'object' ? j.result.distributed : null;
  const perRank = res && Array.isArray(res.per_rank) ? res.per_rank : [];
  // Before a result, time communicating is set against the job's running time so far; the result
  // sets it against each rank's time since the ranks met, and its shares are shown once it is there.
  const running = j.started_at ? jobDuration(j) / 1000 : NaN;
  const ofRunning = (seconds) => num(seconds) && running > 0 ? seconds / running : NaN;
  p.rows.forEach((c, r) => {
    const fin = perRank.find((x) => x && x.rank === r) || null;
    const loss = latest(series, metric(r, 'loss'));
    const syncs = latest(series, metric(r, 'syncs'));
    const comm = rankFigure(fin, series, r, 'comm_seconds');
    const wait = rankFigure(fin, series, r, 'wait_seconds');
    setText(c.device, fin && typeof fin.device === 'string' && fin.device ? fin.device : '\u2014');
    setText(c.loss, loss ? fmtNum(loss.value) : '\u2014');
    setAttr(c.loss, 'title', loss ? 'epoch ' + loss.step : '');
    setText(c.syncs, syncs ? fmtQty(syncs.value) : '\u2014');
    setText(c.sent, fmtBytes(rankFigure(fin, series, r, 'bytes_sent')));
    setText(c.comm, timeAndShare(comm, fin ? fin.comm_share : ofRunning(comm)));
    setText(c.wait, timeAndShare(wait, fin ? fin.wait_share : ofRunning(wait)));
  });
  // The job's figures are rank 0's, as the result's are.
  const syncs0 = latest(series, metric(0, 'syncs'));
  setText(p.summary, summaryLine(p.dist, {
    syncs: res && num(res.syncs) ? res.syncs : syncs0 ? syncs0.value : NaN,
    comm: res ? res.comm_share : ofRunning(rankFigure(null, series, 0, 'comm_seconds')),
    wait: res ? res.wait_share : ofRunning(rankFigure(null, series, 0, 'wait_seconds')),
    of: res ? 'rank 0\'s time' : TERMINAL.has(j.state) ? 'the running time' : 'the running time so far',
  }));
  drawChart(p, series);
}

// "1.2 s (4.2%)": seconds and their share of the time.
function timeAndShare(seconds, share) {
  if (!num(seconds)) return '\u2014';
  return fmtDur(seconds * 1000) + (num(share) ? ' (' + fmtPct(share) + ')' : '');
}

// "DiLoCo on 2 ranks, an outer step every 10 inner steps: 300 outer steps; moving data took 0.7%
// of the running time so far, waiting for the slowest rank 2.3%."
function summaryLine(dist, f) {
  const diloco = dist.algorithm === 'diloco';
  let s = (ALGORITHMS[dist.algorithm] || String(dist.algorithm)) + ' on ' + dist.ranks +
    (dist.ranks === 1 ? ' rank' : ' ranks');
  if (diloco && num(dist.inner_steps)) s += ', an outer step every ' + fmtQty(dist.inner_steps) + ' inner steps';
  const figures = [];
  if (num(f.syncs)) figures.push(fmtQty(f.syncs) + (diloco ? ' outer steps' : ' syncs'));
  if (num(f.comm)) {
    figures.push('moving data took ' + fmtPct(f.comm) + ' of ' + f.of +
      (num(f.wait) ? ', waiting for the slowest rank ' + fmtPct(f.wait) : ''));
  }
  return s + (figures.length ? ': ' + figures.join('; ') : '') + '.';
}

// Each rank's loss per epoch, the first COLORS.length ranks; one chart kept for the detail's
// life and updated when a point arrives, so a zoom or a hover survives new points.
function drawChart(p, series) {
  const shown = Math.min(p.dist.ranks, COLORS.length);
  const lines = Array.from({length: shown}, (_, r) => ({name: metric(r, 'loss'), label: 'rank ' + r,
    color: COLORS[r]}));
  const key = lines.map((l) => (series[l.name] || []).length).join(' ');
  if (key === p.drawn) return;
  p.drawn = key;
  const title = 'Loss per rank' + (shown < p.dist.ranks ? ' (ranks 0\u2013' + (shown - 1) + ' of ' +
    p.dist.ranks + ')' : '');
  if (!p.lossChart || p.lossChart.title !== title) {
    p.lossChart = {title, chart: makeChart({title, unit: false, x: 'epoch', legend: false, series: lines})};
    p.chart.replaceChildren(p.lossChart.chart.root);
  }
  p.lossChart.chart.update(series);
}
