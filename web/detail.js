// detail.js: the expanded job under its row: its loss and accuracy charts (training and held-out
// figures together, per epoch or per step), the job's facts, placement and result, its log tail,
// the Cancel and checkpoint actions, a gpt's prompt box, a distributed job's ranks and a generate
// job's text. It follows the job live over its event stream, and falls back to polling on the
// refresh loop.

import {API, HttpError, TERMINAL, api, errText, getJSON} from './api.js';
import {makeChart} from './chart.js';
import {$, el, setText} from './dom.js';
import {fmtDur, fmtNum, fmtPct, fmtQty, fmtTime, num} from './format.js';
import {generatePanel, generateStats, generatedText} from './generate.js';
import {inetLive, jobDuration, makeRow, rows, updateRow} from './jobrow.js';
import {rankMetrics, ranksPanel} from './ranks.js';
import {refresh} from './refresh.js';
import {flagToken} from './session.js';

// The open detail follows its job live over /jobs/{id}/events (Server-Sent Events): `state`
// replaces the job, `metric` adds a chart point, `log` a log line, `progress` moves the bar.
// Points already recorded come from /metrics once; a stream that fails falls back to polling
// /metrics on the refresh loop, as before. Points are keyed by step, so the two sources overlap
// harmlessly.

const LOG_TAIL = 20;        // log lines the detail shows

// What the detail charts for a train job, by model: a chart each for loss and accuracy, the
// figures on the data trained on beside those on the data held out (an MLP's test split every
// epoch, a gpt's validation windows every eval_every steps), in one colour each throughout, named
// as the result names them ("test", "validation").
// An MLP is charted by optimizer step once its epochs' "epoch" marks come (a run in one process
// records them, with step_loss every log_every steps, so the loss moves inside the first epoch):
// the step losses, then each epoch's figures at the step it ended, the epochs marked; a job
// without them (distributed, or older) is charted by epoch. A gpt trains by steps and has no
// epochs (its windows are drawn at random): nothing to mark.
const TRAIN = '#1d4ed8', HELD_OUT = '#c2410c', STEPS = '#93b4ec';
const MLP_LOSS_BY_STEP = {title: 'Loss', unit: false, x: 'step', marks: 'epoch', series: [
  {name: 'step_loss', label: 'training', color: STEPS, width: 1},
  {name: 'loss', label: 'training (epoch)', color: TRAIN, byEpoch: true},
  {name: 'test_loss', label: 'test', color: HELD_OUT, byEpoch: true}]};
const MLP_ACCURACY_BY_STEP = {title: 'Accuracy', unit: true, x: 'step', marks: 'epoch', series: [
  {name: 'accuracy', label: 'training', color: TRAIN, byEpoch: true},
  {name: 'test_accuracy', label: 'test', color: HELD_OUT, byEpoch: true}]};
const MLP_CHARTS = [
  {title: 'Loss', unit: false, x: 'epoch', series: [{name: 'loss', label: 'training', color: TRAIN},
    {name: 'test_loss', label: 'test', color: HELD_OUT}], bySteps: MLP_LOSS_BY_STEP},
  {title: 'Accuracy', unit: true, x: 'epoch', series: [{name: 'accuracy', label: 'training', color: TRAIN},
    {name: 'test_accuracy', label: 'test', color: HELD_OUT}], bySteps: MLP_ACCURACY_BY_STEP},
];
// A run in one process also records its speed by step (a distributed one, each rank's own
// figures: ranks.js)
const MLP_SPEED = {title: 'Samples per second', unit: false, x: 'step', series: [
  {name: 'samples_per_second', label: 'training', color: TRAIN}]};
const GPT_CHARTS = [
  {title: 'Loss', unit: false, x: 'step', series: [{name: 'loss', label: 'training', color: TRAIN},
    {name: 'val_loss', label: 'validation', color: HELD_OUT}]},
  {title: 'Next-character accuracy', unit: true, x: 'step', series: [
    {name: 'val_accuracy', label: 'validation', color: HELD_OUT}]},
  {title: 'Learning rate', unit: false, x: 'step', series: [{name: 'lr', label: 'schedule', color: TRAIN}]},
  {title: 'Tokens per second', unit: false, x: 'step', series: [
    {name: 'tokens_per_second', label: 'training', color: TRAIN}]},
];
// An inet job reports its rate about every half second at the interactions done so far (its
// count is its step), and its final rate at its final count.
const INET_CHARTS = [
  {title: 'MIPS', unit: false, x: 'interactions', series: [{name: 'mips', label: 'rate', color: TRAIN}]},
];

const MLP_WITH_SPEED = [...MLP_CHARTS, MLP_SPEED];

// Compared runs (the "Compare with" box): each job its own hue, a chart's series in it from dark
// to light; at most COMPARE_MAX beside the open job.
const COMPARE_COLORS = [['#15803d', '#4fb26f', '#a5d8b3'], ['#6d28d9', '#9f7aea', '#cdbcf5'],
  ['#b45309', '#dd8a3c', '#efc898'], ['#be185d', '#e0609a', '#f2b3cf']];
const COMPARE_MAX = COMPARE_COLORS.length;

function chartsFor(job) {
  if (job.kind === 'inet') return INET_CHARTS;
  if (job.kind !== 'train') return [];
  const m = job.spec && job.spec.model;
  if (m && m.type === 'gpt') return GPT_CHARTS;
  return job.spec && job.spec.distributed ? MLP_CHARTS : MLP_WITH_SPEED;
}

// Every metric a layout's charts draw, once: their series, and where they have a view by step,
// its series and marks.
const seriesOf = (charts) => [...new Set(charts.flatMap((c) => [c, c.bySteps].filter(Boolean)
  .flatMap((v) => [...v.series.map((s) => s.name), ...(v.marks ? [v.marks] : [])])))];

// What a chart shows: by its steps (c.x), or by optimizer step where it has that view and the
// job has recorded where its epochs ended: the points by epoch go to the step their epoch ended at.
function chartView(c, series) {
  const v = c.bySteps;
  const ends = v ? series[v.marks] || [] : [];
  if (!ends.length) return {view: c, data: series, marks: []};
  const at = new Map(ends.map((p) => [p.value, p.step]));   // epoch -> the step it ended at
  const data = {};
  for (const s of v.series) {
    const pts = series[s.name] || [];
    data[s.name] = s.byEpoch ? pts.filter((p) => at.has(p.step)).map((p) => ({...p, step: at.get(p.step)})) : pts;
  }
  return {view: v, data, marks: ends.map((p) => ({step: p.step, label: String(p.value),
    title: v.marks + ' ' + p.value + ' ends at step ' + p.step}))};
}

// The detail's charts, kept between redraws (a zoom or a hover survives new points): one per
// layout chart, made again when its view changes (by epoch, then by step). Charts over the same
// steps share their x axis, so that a step is at the same place in each (a loss logged from step
// 10, an accuracy from the first epoch's end), and a zoom applies to all of them.
function drawLayout(d) {
  const views = d.layout.map((c) => chartView(c, d.series));
  const extent = {};                      // x unit -> {from, to} over every chart's points
  for (const {view, data} of views) {
    const e = extent[view.x] || (extent[view.x] = {from: Infinity, to: -Infinity});
    for (const s of view.series) {
      const pts = data[s.name] || [];
      if (!pts.length) continue;
      e.from = Math.min(e.from, pts[0].step);
      e.to = Math.max(e.to, pts[pts.length - 1].step);
    }
  }
  return views.map((v, i) => drawChart(d, i, v, extent[v.view.x]));
}

// A chart's view with the compared jobs' curves added: each job's own view of the same layout
// chart (by its own epochs where it has them), where it is the same kind of view as the open
// job's; every curve's label names its job. Kept per chart while nothing changes, so that the
// chart is updated rather than made again.
function withCompared(d, i, v) {
  if (!d.compare.length) return v;
  const key = d.compare.map((o) => o.id + ':' + Object.values(o.series).reduce((n, p) => n + p.length, 0)).join(' ');
  const k = d.merged[i];
  if (!k || k.base !== v.view || k.key !== key) {
    const series = v.view.series.map((s) => ({...s, label: '#' + d.id + ' ' + s.label}));
    d.compare.forEach((o, n) => v.view.series.forEach((s, j) =>
      series.push({name: '#' + o.id + ' ' + s.name, label: '#' + o.id + ' ' + s.label,
        color: COMPARE_COLORS[n][Math.min(j, 2)], width: 1.4})));
    d.merged[i] = {base: v.view, key, view: {...v.view, series}};
  }
  const data = {...v.data};
  d.compare.forEach((o) => {
    const theirs = chartView(d.layout[i], o.series);
    if (theirs.view !== v.view) return;
    for (const s of v.view.series) data['#' + o.id + ' ' + s.name] = theirs.data[s.name] || [];
  });
  return {view: d.merged[i].view, data, marks: v.marks};
}

function drawChart(d, i, {view, data, marks}, extent) {
  ({view, data, marks} = withCompared(d, i, {view, data, marks}));
  const k = d.chartObjs[i];
  if (k && k.view === view) {
    k.chart.update(data, marks, extent);
    return k.chart.root;
  }
  const chart = makeChart(view, (range) => {
    d.zoom = range && {x: view.x, range};
    for (const o of d.chartObjs) if (o && o.chart !== chart && o.view.x === view.x) o.chart.setZoom(range);
  });
  chart.update(data, marks, extent);
  if (d.zoom && d.zoom.x === view.x) chart.setZoom(d.zoom.range);
  d.chartObjs[i] = {view, chart};
  return chart.root;
}

// The expanded job's detail record, or null. Read by the job table (jobs.js), which keeps the
// detail's table row after the job's own.
export let shown = null;

// A job's address: #/jobs/ID opens its detail, on load and when the address changes, whether or
// not the job is on the page of the list shown (a job elsewhere is fetched and shown above the
// list, "pinned", until the list shows it). The open detail's address stays in the location bar,
// so that it can be copied and shared.
const HASH = /^#\/jobs\/(\d+)$/;
export const jobHash = (id) => '#/jobs/' + id;

// The row's link to its job; a click on it goes to the address (hashchange opens the detail),
// not to the row, whose own click toggles the detail.
export function jobLink(id) {
  const a = el('a', 'permalink', 'link');
  a.href = jobHash(id);
  a.title = 'This job\'s address: opens its detail (copy it to share)';
  a.setAttribute('aria-label', 'Link to job ' + id);
  a.addEventListener('click', (ev) => ev.stopPropagation());
  return a;
}

// The job the address names, opened unless it is open already. navigated: the address changed
// (hashchange), so that going back to the page's bare address closes the detail.
export function openFromHash(navigated = false) {
  const m = HASH.exec(location.hash);
  if (!m) {
    if (navigated && location.hash === '') closeDetail();
    return;
  }
  const id = Number(m[1]);
  if (shown && shown.id === id) return;
  closeDetail();
  openDetail(id, true);
  shown.tr.scrollIntoView({block: 'nearest'});
}

function setHash(h) {
  if (location.hash === h) return;
  history.replaceState(null, '', location.pathname + location.search + h);
}

// The open job's row: its row in the list, else its pinned row.
const rowOf = (d) => rows.get(d.id) || d.pin;

export function toggleDetail(id) {
  const same = shown && shown.id === id;
  closeDetail();
  if (!same) openDetail(id);
}

export function closeDetail() {
  if (!shown) return;
  const r = rows.get(shown.id);
  if (r) r.c.btn.setAttribute('aria-expanded', 'false');
  stopStream(shown);
  if (shown.gen) shown.gen.close();
  shown.tr.remove();
  unpin(shown);
  if (location.hash === jobHash(shown.id)) setHash('');
  shown = null;
}

// A job the list does not show: its own row and detail above the list's rows.
function pin(d) {
  const body = $('pinned-body');
  d.pin = makeRow(d.id, closeDetail);
  d.pin.tr.classList.add('pinned');
  d.pin.c.btn.after(jobLink(d.id));
  d.pin.c.btn.setAttribute('aria-expanded', 'true');
  const note = el('tr', 'pin-note');
  const td = el('td', 'small muted', 'Job #' + d.id + ', opened from its address: not on this page of the list.');
  td.colSpan = 8;
  note.append(td);
  body.replaceChildren(note, d.pin.tr, d.tr);
  body.hidden = false;
  if (d.job) updateRow(d.pin, d.job);
}

function unpin(d) {
  if (!d.pin) return;
  const body = $('pinned-body');
  d.pin = null;
  body.replaceChildren();
  body.hidden = true;
}

// pinned: shown above the list when the list does not have it (openFromHash); otherwise a job not
// listed yet (one just submitted) shows when the list has it.
export function openDetail(id, pinned = false) {
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
  const resume = el('button', null, 'Resume');
  resume.type = 'button';
  resume.id = 'resume-job';
  resume.title = 'Queue it again: a train job continues from its last checkpoint';
  resume.hidden = true;
  const ckpt = el('a', 'btn', 'Download checkpoint');
  ckpt.id = 'checkpoint';
  ckpt.href = API + '/jobs/' + id + '/checkpoint';
  ckpt.setAttribute('download', 'job-' + id + '.safetensors');
  const weights = el('a', 'btn', 'Download weights');   // as PyTorch's load_state_dict takes them
  weights.id = 'weights';
  weights.title = 'The weights alone, named and shaped as PyTorch loads them (torch.nn.Sequential, GPT2LMHeadModel)';
  weights.href = API + '/jobs/' + id + '/weights';
  weights.setAttribute('download', 'job-' + id + '-weights.safetensors');
  const actMsg = el('span', 'act-msg small');
  actMsg.setAttribute('role', 'status');
  actions.append(cancel, resume, ckpt, weights, actMsg);
  const spec = el('details', 'spec');
  spec.append(el('summary', null, 'Spec'), el('pre', 'json', 'loading\u2026'));
  const logBox = el('div', 'logs');
  const logHead = el('h4', null, 'Log');
  const logPre = el('pre', 'log');
  logPre.id = 'job-log';
  logBox.append(logHead, logPre);
  side.append(actions, info, spec);
  const main = el('div', 'main-col');    // the charts, and a gpt's prompt box or the ranks under them
  const compare = el('form', 'compare');  // other runs' curves over these charts
  const cmpIds = el('input');
  cmpIds.id = 'compare-ids';
  cmpIds.placeholder = 'job ids, e.g. 12 15';
  cmpIds.setAttribute('aria-label', 'Jobs to compare with');
  const cmpGo = el('button', null, 'Compare');
  cmpGo.type = 'submit';
  const cmpMsg = el('span', 'small muted');
  cmpMsg.id = 'compare-msg';
  cmpMsg.setAttribute('role', 'status');
  compare.append(el('span', 'small muted', 'Compare with '), cmpIds, cmpGo, cmpMsg);
  main.append(charts, compare);
  box.append(main, side, logBox);
  td.append(box);
  tr.append(td);
  const r = rows.get(id);
  const d = {
    id, tr, main, charts, info, cancel, resume, ckpt, weights, actMsg, spec, logPre, logHead,
    queue: null,            // a queued job's place (GET /jobs/{id}'s "queue"), read while it waits
    job: r ? r.job : null, specValue: undefined, done: false, fetched: false, error: '', tokens: [], tokenBase: null,
    listed: !!r,
    pin: null,              // its pinned row (pin) while the list does not show it
    layout: null,           // the charts, once the spec says which (chartsFor)
    gen: null,              // a gpt's prompt box (generate.js)
    ranks: undefined,       // a distributed job's ranks (ranks.js), once the spec is read; else null
    series: {},             // metric name -> points in step order, whatever the stream brings
    chartObjs: [],          // the layout's charts as drawn (drawChart), kept between redraws
    compare: [],            // other jobs overlaid: [{id, name, series}] (compareWith)
    merged: [],             // per chart, its view with theirs added (withCompared)
    zoom: null,             // {x, range}: the steps the user zoomed the charts to, or null
    polled: {},             // metric name -> the /metrics cursor
    es: null, live: false,
    logs: new Map(), logN: 0, logsFetched: false, logsKey: '',
    drawn: '', infoKey: '', drawTimer: 0, logTimer: 0,
  };
  compare.addEventListener('submit', (ev) => { ev.preventDefault(); compareWith(d, cmpIds.value, cmpMsg); });
  cancel.addEventListener('click', (ev) => { ev.stopPropagation(); cancelJob(d); });
  resume.addEventListener('click', (ev) => { ev.stopPropagation(); resumeJob(d); });
  tr.addEventListener('click', (ev) => ev.stopPropagation());
  shown = d;
  setHash(jobHash(id));
  if (r) {
    r.c.btn.setAttribute('aria-expanded', 'true');
    r.tr.after(tr);
    drawDetail(d);
  } else if (pinned) {
    pin(d);
    drawDetail(d);
  }
  startStream(d);
  loadLogs(d);
  refresh();
}

// A point into its series, in step order, once per step.
function addPoint(d, p) {
  if (typeof p.name !== 'string' || typeof p.step !== 'number') return false;
  const a = d.series[p.name] || (d.series[p.name] = []);
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
    if (!j || shown !== d || j.id !== d.id) return;
    setJob(d, j);
    if (TERMINAL.has(j.state)) {
      stopStream(d);        // the stream ends here; the poll below collects any point missed,
      loadLogs(d);          // and this any line logged after the final state
      refresh();
    }
  });
  // the server's last word on a job's stream: without it EventSource would reconnect forever
  es.addEventListener('end', () => { if (d.es === es) { stopStream(d); refresh(); } });
  // a generate job's characters as its decoder makes them (the text is the result's at the end);
  // a detail opened mid-text starts at the first it hears (tokenBase: those before it are missed)
  es.addEventListener('token', (ev) => {
    const t = parse(ev);
    if (!t || shown !== d || typeof t.text !== 'string' || typeof t.index !== 'number') return;
    if (d.tokenBase === null) d.tokenBase = t.index;
    if (t.index !== d.tokenBase + d.tokens.length) return;
    d.tokens.push(t.text);
    drawSoon(d);
  });
  es.addEventListener('metric', (ev) => {
    const p = parse(ev);
    if (p && shown === d && addPoint(d, p)) drawSoon(d);
  });
  es.addEventListener('progress', (ev) => {
    const p = parse(ev);
    if (!p || shown !== d || !d.job || typeof p.progress !== 'number') return;
    d.job = {...d.job, progress: p.progress};
    const r = rowOf(d);
    if (r) updateRow(r, d.job);
    drawSoon(d);
  });
  es.addEventListener('log', (ev) => {
    const p = parse(ev);
    if (!p || shown !== d || typeof p.seq !== 'number') return;
    d.logs.set(p.seq, logLine(p.time, p.level, p.line));
    if (!d.logTimer) d.logTimer = setTimeout(() => { d.logTimer = 0; if (shown === d) drawLogs(d); }, DRAW_MS);
  });
  es.addEventListener('error', () => {
    // Refused, or dropped before the final state: poll instead (EventSource would retry
    // on its own, but the refresh loop already covers a server that comes and goes).
    if (shown !== d || !d.live) return;
    stopStream(d);
    refresh();
  });
}

// Points can arrive thousands a second (a small model's epochs): one redraw per DRAW_MS.
const DRAW_MS = 150;
function drawSoon(d) {
  if (d.drawTimer) return;
  d.drawTimer = setTimeout(() => { d.drawTimer = 0; if (shown === d) drawDetail(d); }, DRAW_MS);
}

function stopStream(d) {
  if (d.es) d.es.close();
  d.es = null;
  d.live = false;
}

// The job object from a stream event or an action: the detail, and its row when shown.
function setJob(d, j) {
  d.job = j;
  const r = rowOf(d);
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
    if (!r.ok) { if (shown === d) setText(d.logHead, 'Log (unavailable: ' + errText(r) + ')'); return; }
    const lines = r.text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    lines.forEach((s, i) => {
      const m = /^(\S+) (\S+) (.*)$/.exec(s);
      if (!d.logs.has(from + i + 1)) d.logs.set(from + i + 1, m ? logLine(m[1], m[2], m[3]) : s);
    });
    d.logN = Math.max(d.logN, from + lines.length);
    d.logsFetched = true;
    if (shown === d) drawLogs(d);
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
  const train = d.job && d.job.kind === 'train';
  if (!window.confirm('Cancel job #' + d.id + '?' + (train
    ? ' It stops at its next step, checkpointed; Resume continues it from there.' : ''))) return;
  d.cancel.disabled = true;
  d.actMsg.className = 'act-msg small';
  setText(d.actMsg, 'Cancelling\u2026');
  try {
    const r = await api(API + '/jobs/' + d.id + '/cancel', {method: 'POST'});
    if (shown !== d) return;
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
    if (shown === d) {
      d.actMsg.className = 'act-msg small err';
      setText(d.actMsg, 'Not cancelled: ' + (e.name === 'AbortError' ? 'timed out' : 'server unreachable'));
    }
  } finally {
    d.cancel.disabled = false;
    if (shown === d) drawDetail(d, true);
  }
}

// Resume: a cancelled job queued again; its next run continues from its last checkpoint.
async function resumeJob(d) {
  d.resume.disabled = true;
  d.actMsg.className = 'act-msg small';
  setText(d.actMsg, 'Resuming\u2026');
  try {
    const r = await api(API + '/jobs/' + d.id + '/resume', {method: 'POST'});
    if (shown !== d) return;
    if (r.status === 200) {
      const ran = r.body && r.body.attempts > 0;
      setText(d.actMsg, 'Queued again' + (!ran ? '.' : r.body.kind === 'train'
        ? ': it continues from its last checkpoint.' : ': it runs again from the start.'));
      d.actMsg.className = 'act-msg small ok';
      if (r.body && r.body.id === d.id) {
        d.queue = r.body.queue || null;
        d.done = false;
        setJob(d, r.body);
      }
      refresh();
      return;
    }
    d.actMsg.className = 'act-msg small err';
    if (r.status === 401) {
      setText(d.actMsg, 'Not resumed: the server needs the API token (paste data/token into "API token" at the top). ' + errText(r));
      flagToken();
    } else {
      setText(d.actMsg, 'Not resumed: ' + errText(r));
    }
  } catch (e) {
    if (shown === d) {
      d.actMsg.className = 'act-msg small err';
      setText(d.actMsg, 'Not resumed: ' + (e.name === 'AbortError' ? 'timed out' : 'server unreachable'));
    }
  } finally {
    d.resume.disabled = false;
    if (shown === d) drawDetail(d, true);
  }
}

// Fetches what the open detail lacks: the spec once, the points recorded so far once, then,
// while no stream carries them, new points (after_step) until the job has finished.
export async function refreshDetail() {
  const d = shown;
  if (!d) return;
  try {
    // the whole job: once for the spec (and all of the job, for one opened from its address), and
    // again for the result when it ended without one here (list rows carry only its summary; a
    // state event too big for a frame drops it)
    // (and while it is queued, for its place in the queue, which only a job read alone carries)
    if (d.specValue === undefined || (d.job && d.job.state === 'succeeded' && !d.job.result) ||
        (d.job && d.job.state === 'queued')) {
      const full = await getJSON(API + '/jobs/' + d.id);
      d.queue = full.queue || null;
      d.specValue = full.spec || null;
      d.layout = chartsFor(full);
      if (shown === d && full.id === d.id) {
        d.job = {...d.job, ...full};
        if (d.error) { d.error = ''; d.done = false; }   // refused before: fetch its metrics now
        if (d.pin) updateRow(d.pin, d.job);
      }
    }
    if (!d.job) return;
    if (!d.done && (!d.live || !d.fetched)) {
      const finished = TERMINAL.has(d.job.state);
      for (const name of [...seriesOf(d.layout), ...rankMetrics(d.specValue)]) {
        if (!(name in d.polled)) d.polled[name] = -1;
        for (let page = 0; page < 100; page++) {
          const pts = await metricPage(d.id, name, d.polled[name]);
          for (const p of pts) addPoint(d, p);
          if (pts.length) d.polled[name] = pts[pts.length - 1].step;
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
  if (shown === d) drawDetail(d);
}

// One page of metric name of job id: its points after step `after` (-1: from the first), in
// step order.
async function metricPage(id, name, after) {
  let url = API + '/jobs/' + id + '/metrics?name=' + encodeURIComponent(name);
  if (after >= 0) url += '&after_step=' + after;
  const m = await getJSON(url);
  return (Array.isArray(m.metrics) ? m.metrics : [])
    .filter((p) => p.name === name && typeof p.step === 'number' && p.step > after)
    .sort((x, y) => x.step - y.step);
}

// Every recorded point of metric name of job id, in step order.
async function allPoints(id, name) {
  const out = [];
  let after = -1;
  for (let page = 0; page < 100; page++) {
    const pts = await metricPage(id, name, after);
    if (!pts.length) break;
    out.push(...pts.map((p) => ({step: p.step, value: p.value})));
    after = pts[pts.length - 1].step;
  }
  return out;
}

// Overlays the jobs named in text (ids, any separators; empty: none) on the open job's charts: a
// job of another kind or model, or one that does not exist, is named in msg and left out.
async function compareWith(d, text, msg) {
  const ids = [...new Set((text.match(/\d+/g) || []).map(Number))].filter((id) => id !== d.id);
  const said = [];
  if (ids.length > COMPARE_MAX) said.push('at most ' + COMPARE_MAX + ' jobs: the first ' + COMPARE_MAX + ' are shown');
  const compare = [];
  for (const id of ids.slice(0, COMPARE_MAX)) {
    try {
      const job = await getJSON(API + '/jobs/' + id);
      const layout = chartsFor(job);
      if (!d.layout || layout !== d.layout) {
        said.push('#' + id + ' is ' + (layout.length ? 'another kind of run' : 'a job without charts'));
        continue;
      }
      const series = {};
      for (const name of seriesOf(layout)) series[name] = await allPoints(id, name);
      compare.push({id, name: job.name, series});
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      said.push('#' + id + ': ' + e.message);
    }
  }
  if (shown !== d) return;
  d.compare = compare;
  d.merged = [];
  d.drawn = '';
  msg.textContent = (compare.length ? 'comparing with ' + compare.map((o) => '#' + o.id + ' ' + o.name).join(', ') : '') +
    (said.length ? (compare.length ? '; ' : '') + said.join('; ') : '');
  drawDetail(d);
}

// The charts area: the job's charts once its spec says which, or what stands in their place.
function drawCharts(d) {
  const j = d.job;
  const n = (d.layout ? seriesOf(d.layout) : []).reduce((a, name) => a + (d.series[name] || []).length, 0);
  const text = j && j.result && j.result.text;
  const key = [n, d.fetched, d.done, d.error, d.layout && d.layout.length, j && j.state, text, d.tokens.length].join(' ');
  if (key === d.drawn) return;
  d.drawn = key;
  const c = d.charts;
  if (d.layout && d.layout.length && !(d.error && n === 0)) {
    const want = drawLayout(d);
    if (want.some((e, i) => c.children[i] !== e) || c.children.length !== want.length) c.replaceChildren(...want);
    return;
  }
  c.textContent = '';
  if (d.error && n === 0) {
    c.append(el('p', 'err', (j ? 'Metrics unavailable: ' : 'Job #' + d.id + ' cannot be shown: ') + d.error));
  }
  else if (!d.layout) c.append(el('p', 'muted', 'Loading metrics\u2026'));
  else c.append(...noCharts(j, d));
}

// A job without charts: a generate job's text (while it runs, the characters streamed so far),
// else a line that says why.
function noCharts(j, d) {
  const r = j.result;
  if (j.kind !== 'generate') {
    return [el('p', 'muted', 'No charts: a' + (/^[aeiou]/.test(j.kind) ? 'n ' : ' ') + j.kind +
      ' job records no metrics over its run.')];
  }
  if (r && typeof r.text === 'string') {
    return [generatedText(r.prompt, r.completion), el('p', 'gen-stats small', generateStats(r))];
  }
  if (!TERMINAL.has(j.state) && d.tokens.length) {
    const text = generatedText((d.specValue && d.specValue.prompt) || '', (d.tokenBase ? '\u2026' : '') + d.tokens.join(''));
    text.dataset.state = 'streaming';
    return [text, el('p', 'gen-stats small', fmtQty(d.tokenBase + d.tokens.length) + ' characters so far' +
      (d.tokenBase ? ' (the first ' + fmtQty(d.tokenBase) + ' came before this view opened)' : '') + '\u2026')];
  }
  return [el('p', 'muted', TERMINAL.has(j.state) ? 'No text: the job ' + j.state + '.'
    : 'The text shows here as the job writes it.')];
}

function drawDetail(d, force) {
  if (d.pin && d.listed) unpin(d);        // the list shows it now, its detail under its row
  drawCharts(d);
  const j = d.job;
  if (!j) return;
  const active = !TERMINAL.has(j.state);
  d.cancel.hidden = !active;
  d.resume.hidden = j.state !== 'cancelled';
  if (j.cancel_requested && active) {
    d.cancel.disabled = true;
    setText(d.cancel, 'Cancel requested');
  }
  d.ckpt.hidden = d.weights.hidden = j.kind !== 'train';
  if (d.layout === GPT_CHARTS && !d.gen) {
    d.gen = generatePanel(d.id);
    d.main.append(d.gen.root);
  }
  if (d.gen) d.gen.update(j, d.specValue);
  if (d.ranks === undefined && d.specValue !== undefined) {
    d.ranks = ranksPanel(d.specValue);
    if (d.ranks) d.main.append(d.ranks.root);
  }
  if (d.ranks) d.ranks.update(j, d.series);
  if (d.specValue !== undefined && !d.spec.dataset.done) {
    d.spec.dataset.done = '1';
    d.spec.lastChild.textContent = d.specValue ? JSON.stringify(d.specValue, null, 2) : '(no spec)';
  }
  const itrs = j.kind === 'inet' && active ? inetLive(j.id) : null;   // an inet job has no fraction
  const key = JSON.stringify([j.state, j.result, j.error, j.started_at, j.finished_at,
    j.device, j.attempts, j.estimate, j.cancel_requested, j.progress, itrs, j.priority, j.tags,
    j.state === 'queued' && d.queue ? d.queue.reason : '']);
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
    ['Run time', (j.started_at ? fmtDur(jobDuration(j)) + (j.finished_at ? '' : ' so far') : '\u2014') +
      (j.estimate && num(j.estimate.seconds) && j.estimate.seconds >= 0.001
        ? ' (estimated ' + fmtDur(j.estimate.seconds * 1000) + ')' : '')],
  ];
  if (j.priority) facts.push(['Priority', String(j.priority)]);
  if (j.state === 'queued' && d.queue && d.queue.reason) facts.push(['Waits', d.queue.reason]);
  const tags = j.tags && typeof j.tags === 'object' ? Object.entries(j.tags) : [];
  if (tags.length) facts.push(['Tags', tags.map(([k, v]) => k + ':' + v).join('  ')]);
  if (itrs) facts.push(['Interactions', fmtQty(itrs.interactions) + ' so far, ' + fmtNum(itrs.mips) + ' MIPS']);
  if (typeof j.progress === 'number' && active && j.state !== 'queued' && (j.kind !== 'inet' || j.progress > 0)) {
    facts.push(['Progress', fmtPct(j.progress)]);
  }
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
// form with its cost for inet, a generate job's speed, else the first few scalar fields.
function resultFacts(r) {
  const dl = el('dl', 'facts result');
  const add = (k, v, cls) => { const dd = el('dd', cls, v); dl.append(el('dt', null, k), dd); };
  if (typeof r.normal_form === 'string') {
    // a pgl program's value, read back; its net in the Result JSON below (an HVM2 program has none)
    if (typeof r.value === 'string') add('Value', r.value, 'mono');
    else add('Normal form', r.normal_form, 'mono');
    add('Interactions', fmtQty(r.interactions));
    add('MIPS', fmtNum(r.mips));
    if (num(r.seconds)) add('Seconds', fmtNum(r.seconds));
  } else if ('accuracy' in r || 'weights_sha256' in r) {
    // accuracy and loss are the held-out data's: a gpt's validation windows, an MLP's test split
    const held = 'val_loss' in r ? 'Validation ' : 'test_loss' in r ? 'Test ' : '';
    if (num(r.accuracy)) add(held ? held + 'accuracy' : 'Accuracy', fmtPct(r.accuracy));
    if (num(r.loss)) add(held ? held + 'loss' : 'Loss', fmtNum(r.loss));
    if (num(r.train_loss)) add('Training loss', fmtNum(r.train_loss));
    if (num(r.tokens_per_second)) add('Tokens/s', fmtQty(r.tokens_per_second));
    if (num(r.params)) add('Parameters', fmtQty(r.params));
    if (r.weights_sha256) add('Weights SHA-256', String(r.weights_sha256), 'mono hash');
    if (num(r.seconds)) add('Seconds', fmtNum(r.seconds));
  } else if (typeof r.completion === 'string') {   // its text stands in the charts' place
    add('Characters', fmtQty(r.tokens));
    add('Tokens/s', fmtNum(r.tokens_per_second));
    add('Seconds', fmtNum(r.seconds));
    add('From', 'checkpoint of step ' + fmtNum(r.checkpoint_step) + ', seed ' + fmtNum(r.seed));
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
