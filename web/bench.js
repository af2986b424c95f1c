// bench.js: the Benchmarks panel: a suite's latest figures per case and device from
// GET /api/v1/benchmarks, as a table and as bar charts (each device against the host reference,
// or one bar per device), with CSV and JSON export links. BENCH says, per suite, what is shown.

import {API, api, errText} from './api.js';
import {barChart} from './barchart.js';
import {$, el, setText} from './dom.js';
import {fmtNum, fmtPct, fmtQty, fmtTime, num} from './format.js';

// GET /api/v1/benchmarks?suite= returns a suite's rows oldest first; the panel keeps the
// latest row per (case, device), tabulates them and draws them as grouped horizontal bars.
// It is reloaded when a bench job is seen to succeed, when the suite changes, and at most
// every BENCH_EVERY_MS otherwise (a job on another page of the job table finishes unseen),
// never at the jobs' 1 s pace: a suite's export can be thousands of rows.

const BENCH_EVERY_MS = 30000;
const BENCH_LIMIT = 1000;   // newest rows fetched: every case of the last runs of many devices
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
    cols: [['shape', 'shape', String], ['est_mib', 'est. MiB'], ['cpu_ms', 'host ms'],
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
  // A character model: a token is a character, so training and generation share one axis.
  gpt: {
    cols: [['steps', 'steps'], ['ms_per_step', 'ms/step'], ['tokens_per_second', 'train tok/s', fmtQty],
      ['gflops', 'GFLOP/s'], ['val_loss', 'val. loss'], ['characters', 'generated'],
      ['characters_per_second', 'gen. chars/s', fmtQty], ['params', 'params', fmtQty]],
    metric: {value: (r) => pick(r.tokens_per_second, r.characters_per_second),
      title: 'characters per second, training and generating (higher is better)', axis: 'chars/s'},
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

const pick = (a, b) => num(a) ? a : b;

// Ratios to 3 figures at most: 0.13x, 2.15x, 27.4x (the noise is larger than a 4th).
function fmtX(v) { return num(v) ? (Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2)) + '\u00d7' : fmtNum(v); }
function fmtYes(v) { return typeof v === 'boolean' ? (v ? 'yes' : 'no') : fmtNum(v); }

function benchURL(suite, format) {
  return API + '/benchmarks?suite=' + encodeURIComponent(suite) + '&format=' + format;
}

export function setBenchSuite(suite) {
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
export function benchAfterJobs(list) {
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

// One figure per case (`metric.key`, or `metric.value` where it is derived), one bar per device.
function metricChart(suite, def, list, devices) {
  const m = def.metric;
  const color = (d) => DEVICE_COLORS[devices.indexOf(d) % DEVICE_COLORS.length];
  const value = m.value || ((r) => r[m.key]);
  const groups = [];
  for (const r of list) {
    let g = groups[groups.length - 1];
    if (!g || g.label !== r.case) groups.push(g = {label: r.case, bars: []});
    g.bars.push({value: value(r), color: color(r.device),
      tip: r.case + ', ' + r.device + ': ' + fmtNum(value(r)) + ' ' + m.axis});
  }
  return barChart({
    title: suite, sub: m.title,
    legend: devices.map((d) => ({label: d, color: color(d)})),
    groupHead: def.caseHead || 'case', axis: m.axis, groups,
    label: suite + ': ' + m.title + ', one bar per device (' + devices.join(', ') +
      '). The table below has the figures.',
  });
}
