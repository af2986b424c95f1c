// jobrow.js: one row of the job table per job: built once, then updated in place from each
// listing (state badge, progress bar, duration, a one-line result), so that a focused row keeps
// its focus across refreshes. `rows` holds the rows of the page shown. A running inet job shows
// no fraction, as none is known before its normal form: its interactions so far and their rate.

import {API, getJSON} from './api.js';
import {el, setAttr, setText} from './dom.js';
import {fmtDur, fmtNum, fmtPct, fmtQty, num} from './format.js';

export const rows = new Map();   // job id -> {tr, c (its cells), job}

// A running inet job's latest figures, from its `interactions` and `mips` metrics (the engine
// reports both about every half second, at the count as their step), asked for at most once per
// LIVE_MS per job while its row is drawn.
const LIVE_MS = 1000;
const live = new Map();          // job id -> {after (the metrics cursor), interactions, mips, at, busy}

// The running inet job's figures so far, or null before its first report.
export function inetLive(id) {
  const l = live.get(id);
  return l && num(l.interactions) ? {interactions: l.interactions, mips: l.mips} : null;
}

function followInet(r, id) {
  let l = live.get(id);
  if (!l) live.set(id, l = {after: -1, interactions: NaN, mips: NaN, at: 0, busy: false});
  if (l.busy || Date.now() - l.at < LIVE_MS) return;
  l.busy = true;
  l.at = Date.now();
  getJSON(API + '/jobs/' + id + '/metrics?after_step=' + l.after).then((m) => {
    // ordered by name, then step: the last of each name is its latest; the cursor follows mips,
    // written after the count it goes with
    for (const p of Array.isArray(m.metrics) ? m.metrics : []) {
      if (!num(p.value) || typeof p.step !== 'number') continue;
      if (p.name === 'interactions') l.interactions = p.value;
      else if (p.name === 'mips') { l.mips = p.value; l.after = Math.max(l.after, p.step); }
    }
    if (r.job && r.job.id === id && live.has(id)) updateRow(r, r.job);
  }).catch(() => { /* the banner tells of an unreachable server; the next refresh asks again */ })
    .finally(() => { l.busy = false; });
}

function liveSummary(id) {
  const f = inetLive(id);
  return f ? fmtQty(f.interactions) + ' itrs \u00b7 ' + fmtNum(f.mips) + ' MIPS so far' : 'running\u2026';
}

// Milliseconds from start to finish, or to now while the job runs; NaN before it starts.
export function jobDuration(j) {
  const a = Date.parse(j.started_at);
  if (isNaN(a)) return NaN;
  const b = j.finished_at ? Date.parse(j.finished_at) : Date.now();
  return Math.max(0, b - a);
}

// One line for the Result column, from the job's `summary` (the result's headline figures, which
// list rows carry instead of the result): loss and accuracy for training, the normal form (cut
// short by the server) with its interaction count and MIPS for inet, the start of the text and
// its speed for generate, the suite and its row count for bench, else the first few fields.
function resultSummary(s) {
  if (!s || typeof s !== 'object') return '';
  const parts = [];
  if (typeof s.normal_form === 'string') {   // a pgl program's value where it has one
    return (typeof s.value === 'string' ? s.value : s.normal_form) + ' \u00b7 ' + fmtNum(s.interactions) + ' itrs \u00b7 ' + fmtNum(s.mips) + ' MIPS';
  }
  if (typeof s.text === 'string') return JSON.stringify(s.text) + ' \u00b7 ' + fmtNum(s.tokens_per_second) + ' tokens/s';
  if (typeof s.suite === 'string' && typeof s.rows === 'number') return s.suite + ' \u00b7 ' + s.rows + ' rows';
  if ('loss' in s) parts.push('loss ' + fmtNum(s.loss));
  if (typeof s.accuracy === 'number') parts.push('acc ' + fmtPct(s.accuracy));
  if (parts.length) return parts.join(' \u00b7 ');
  for (const [k, v] of Object.entries(s)) {
    if (parts.length === 3) break;
    if (v === null || typeof v !== 'object') parts.push(k + ' ' + (typeof v === 'number' ? fmtNum(v) : String(v)));
  }
  return parts.join(' \u00b7 ');
}

// onActivate: a click on the row (not one that ends a text selection) or on its id button.
export function makeRow(id, onActivate) {
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
  c.nameText = el('span');
  c.tags = el('span', 'tags small muted');   // its tags, "key:value" each
  c.name.append(c.nameText, c.tags);
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
    onActivate();
  });
  return {tr, c, job: null};
}

export function updateRow(r, j) {
  const c = r.c;
  r.job = j;
  const tags = j.tags && typeof j.tags === 'object' ? Object.entries(j.tags).map(([k, v]) => k + ':' + v).join(' ') : '';
  setText(c.nameText, j.name || '');
  setText(c.tags, tags ? ' ' + tags : '');
  setAttr(c.name, 'title', (j.name || '') + (tags ? ' (' + tags + ')' : ''));
  setText(c.kind, j.kind || '');
  setText(c.state, j.state || '?');
  setAttr(c.state, 'class', 'badge state-' + (j.state || 'unknown'));
  setAttr(r.tr, 'class', 'job row-' + (j.state || 'unknown'));
  const dev = j.device || (j.device_requested ? j.device_requested + ' (requested)' : '');
  setText(c.device, dev);
  setAttr(c.device, 'title', dev);
  const inetRunning = j.kind === 'inet' && j.state === 'running';
  if (!inetRunning) live.delete(j.id);
  let p = typeof j.progress === 'number' ? j.progress : 0;
  if (j.state === 'succeeded') p = 1;
  p = Math.min(1, Math.max(0, p));
  const pct = Math.round(p * 1000) / 10;
  c.fill.style.width = pct + '%';
  // a fraction comes only from an earlier run of the same program (paragond knows its count)
  const noFraction = inetRunning && !(j.progress > 0);
  c.bar.hidden = noFraction;
  setAttr(c.bar, 'aria-valuenow', String(pct));
  setText(c.pct, j.state === 'queued' || noFraction ? '' : fmtPct(p));
  setText(c.dur, j.started_at ? fmtDur(jobDuration(j)) : '\u2014');
  let res = '', title = '', cls = 'col-result';
  if (j.state === 'failed' || (j.error && j.error.message)) {
    res = j.error && j.error.message ? j.error.message : 'failed';
    title = j.error ? [j.error.code, j.error.message, j.error.field && 'field ' + j.error.field]
      .filter(Boolean).join(' \u2014 ') : res;
    cls += ' err';
  } else if (j.summary) {
    res = title = resultSummary(j.summary);
  } else if (inetRunning) {
    followInet(r, j.id);
    res = title = liveSummary(j.id);
    cls += ' muted';
  } else if (j.state === 'cancelled') {
    res = title = 'cancelled';
    cls += ' muted';
  }
  setText(c.result, res);
  setAttr(c.result, 'title', title);
  setAttr(c.result, 'class', cls);
}

