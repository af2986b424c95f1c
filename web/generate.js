// generate.js: text from a gpt job. The prompt box on its detail (prompt, max tokens,
// temperature, seed) whose Generate button streams the completion into the page a character at a
// time (POST /jobs/{id}/generate read as events), then its speed; enabled once the job has a
// checkpoint. Also the generated text as a generate job's own detail shows it.

import {API, HttpError, TERMINAL, api, errText, getJSON, postEvents} from './api.js';
import {el, setText} from './dom.js';
import {fmtDur, fmtNum, fmtQty} from './format.js';
import {refresh} from './refresh.js';
import {flagToken} from './session.js';

const PROBE_MS = 1000;      // while the job runs without a checkpoint, how often to look for one (a HEAD)
// The body's fields the box has an input for (the API's error names the field).
const FIELDS = {prompt: 'gen-prompt', max_tokens: 'gen-max-tokens', temperature: 'gen-temperature',
  seed: 'gen-seed'};

// The prompt in bold, then what the model wrote: a generate job's text, or the box's output.
export function generatedText(prompt, completion) {
  const pre = el('pre', 'gen-text');
  pre.append(el('strong', 'gen-prompt', prompt), document.createTextNode(completion));
  return pre;
}

// One line of figures: characters, time, speed, where and from which checkpoint.
export function generateStats(r) {
  return [fmtQty(r.tokens) + ' characters in ' + fmtDur(r.seconds * 1000),
    fmtNum(r.tokens_per_second) + ' tokens/s', 'on ' + (r.device || '?'),
    'checkpoint of step ' + fmtNum(r.checkpoint_step)].join(' \u00b7 ');
}

function numberInput(id, label, value, attrs) {
  const l = el('label', null, label + ' ');
  const i = el('input');
  i.id = id;
  i.type = 'number';
  i.value = value;
  for (const k in attrs) i.setAttribute(k, attrs[k]);
  l.append(i);
  return l;
}

// The box for gpt job `id`; the detail calls update(job, spec) whenever it draws and close()
// when it closes (which stops reading a stream; the generate job itself runs on).
export function generatePanel(id) {
  const root = el('section', 'generate');
  root.setAttribute('aria-label', 'Generate text from this model');
  const form = el('form', 'gen-form');
  form.noValidate = true;
  const pl = el('label', 'gen-prompt-label', 'Prompt ');
  const prompt = el('textarea');
  prompt.id = FIELDS.prompt;
  prompt.rows = 2;
  prompt.spellcheck = false;
  pl.append(prompt);
  const go = el('button', null, 'Generate');
  go.type = 'submit';
  go.id = 'generate';
  const knobs = el('div', 'gen-knobs');
  knobs.append(numberInput(FIELDS.max_tokens, 'Max tokens', '200', {min: 1, step: 1}),
    numberInput(FIELDS.temperature, 'Temperature', '0.8', {min: 0, step: 0.1}),
    numberInput(FIELDS.seed, 'Seed', '0', {min: 0, step: 1}), go);
  // While a text streams: cancels its generate job, which keeps what it wrote so far here.
  const stop = el('button', 'cancel', 'Stop');
  stop.type = 'button';
  stop.id = 'gen-stop';
  stop.hidden = true;
  knobs.append(stop);
  form.append(pl, knobs);
  const note = el('p', 'gen-note small muted');
  note.id = 'gen-note';
  const error = el('p', 'field-error');
  error.id = 'gen-error';
  error.setAttribute('role', 'alert');
  error.hidden = true;
  const out = el('div', 'gen-out');
  out.setAttribute('aria-live', 'polite');
  const stats = el('p', 'gen-stats small');
  stats.id = 'gen-stats';
  root.append(el('h4', null, 'Generate'), form, note, error, out, stats);

  const p = {id, root, prompt, go, stop, note, error, out, stats, job: null, spec: null,
    checkpoint: null, probing: false, probedAt: 0, probedState: '', streaming: null, genJob: null};
  stop.addEventListener('click', () => stopGenerating(p));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); generate(p); });
  prompt.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); generate(p); }
  });
  return {
    root,
    update(job, spec) { p.job = job; p.spec = spec; probe(p); draw(p); },
    close() {
      const c = p.streaming;
      p.streaming = null;
      if (c) c.abort();
    },
  };
}

// Whether the job has a checkpoint yet (HEAD on its download): every PROBE_MS while it runs,
// once more when it ends. Once there, a checkpoint stays.
async function probe(p) {
  const j = p.job;
  if (!j || p.checkpoint || p.probing) return;
  const ended = TERMINAL.has(j.state);
  if (ended ? p.probedState === j.state : Date.now() - p.probedAt < PROBE_MS) return;
  p.probing = true;
  p.probedAt = Date.now();
  p.probedState = j.state;
  try {
    const r = await api(API + '/jobs/' + p.id + '/checkpoint', {method: 'HEAD'});
    p.checkpoint = r.ok;
  } catch (_) {
    p.checkpoint = false;   // unreachable: the banner says so; the next probe asks again
  } finally {
    p.probing = false;
  }
  draw(p);
}

function draw(p) {
  const j = p.job;
  const active = j && !TERMINAL.has(j.state);
  p.go.disabled = !p.checkpoint || !!p.streaming;
  setText(p.go, p.streaming ? 'Generating\u2026' : 'Generate');
  p.stop.hidden = !p.streaming;
  const every = p.spec && p.spec.checkpoint_every;
  let why;
  if (p.checkpoint) {
    why = active ? 'From its latest checkpoint, on the host: the job\'s device is busy training it.'
      : 'From its checkpoint, on ' + (j.device || 'its device') + '.';
  } else if (p.checkpoint === null) {
    why = 'Looking for a checkpoint\u2026';
  } else if (active) {
    why = 'Generate is available once the job has a checkpoint: it writes one ' +
      (every > 0 ? 'every ' + every + ' steps and ' : '') + 'when it finishes.';
  } else {
    why = 'This job left no checkpoint to generate from.';
  }
  setText(p.note, why);
  const context = p.spec && p.spec.model && p.spec.model.context;
  p.prompt.placeholder = 'Text to continue' + (context ? ', up to ' + context + ' characters,' : '') +
    ' in the characters the model was trained on';
}

function clearError(p) {
  p.error.hidden = true;
  p.error.textContent = '';
  for (const id of Object.values(FIELDS)) {
    const i = document.getElementById(id);
    i.classList.remove('invalid');
    i.removeAttribute('aria-invalid');
  }
}

// The message under the box; the input the API's field names is marked.
function showError(p, text, field) {
  setText(p.error, text);
  p.error.hidden = false;
  const i = field && FIELDS[field] ? document.getElementById(FIELDS[field]) : null;
  if (i) {
    i.classList.add('invalid');
    i.setAttribute('aria-invalid', 'true');
    i.focus();
  }
}

// A number input's value as a number, or as typed when it is none (the API names the field).
function numberOf(id) {
  const v = document.getElementById(id).value;
  const n = Number(v);
  return v.trim() !== '' && Number.isFinite(n) ? n : v;
}

async function generate(p) {
  if (p.go.disabled) return;
  clearError(p);
  const body = {prompt: p.prompt.value, max_tokens: numberOf(FIELDS.max_tokens),
    temperature: numberOf(FIELDS.temperature), seed: numberOf(FIELDS.seed), stream: true};
  // A device runs one job at a time (unless paragond runs several: --jobs-per-device): text from
  // a job still training would wait for its end.
  if (p.job && !TERMINAL.has(p.job.state)) body.device = 'host';
  const ctl = new AbortController();
  const text = generatedText(body.prompt, '');
  const completion = text.lastChild;
  text.dataset.state = 'streaming';
  text.dataset.tokens = '0';
  const s = {n: 0, job: null};
  // The previous text stays until this one starts: a refusal leaves it in place.
  const onEvent = (type, data) => {
    if (!data || p.streaming !== ctl) return;
    if (p.out.firstChild !== text) p.out.replaceChildren(text);
    if (type === 'token' && data.index === s.n) {
      completion.appendData(data.text);
      text.dataset.tokens = String(++s.n);
    } else if (type === 'state' && data.id != null) {
      if (!s.job) refresh();              // the generate job joins the list
      s.job = data;
      p.genJob = data.id;
      setText(p.stats, 'Job #' + data.id + ' ' + data.state + (data.device ? ' on ' + data.device : '') + '\u2026');
    }
  };
  p.streaming = ctl;
  draw(p);
  try {
    const r = await postEvents(API + '/jobs/' + p.id + '/generate', body, onEvent, ctl.signal);
    if (p.streaming !== ctl) return;
    if (r.ok) {
      await ended(p, text, s);
      return;
    }
    const e = r.body && r.body.error;
    if (r.status === 401) flagToken();
    showError(p, 'Not generated (HTTP ' + r.status + '): ' + errText(r) +
      (r.status === 401 ? ' Paste data/token into "API token" at the top.' : ''), e && e.field);
  } catch (e) {
    if (p.streaming !== ctl) return;      // the detail closed
    showError(p, 'Not generated: ' + (e.name === 'AbortError' ? 'timed out'
      : e instanceof HttpError ? e.message : 'server unreachable'));
  } finally {
    if (p.streaming === ctl) p.streaming = null;
    p.genJob = null;
    draw(p);
    refresh();
  }
}

// Stop: cancels the generate job (its stream then ends with the job cancelled, the text so far
// kept); before the job is known, the request itself is dropped.
async function stopGenerating(p) {
  const ctl = p.streaming;
  if (!ctl) return;
  p.stop.disabled = true;
  try {
    if (p.genJob == null) {
      p.streaming = null;
      ctl.abort();
      return;
    }
    const r = await api(API + '/jobs/' + p.genJob + '/cancel', {method: 'POST'});
    if (!r.ok && r.status === 401) flagToken();
    if (!r.ok && r.status !== 409) showError(p, 'Not stopped (HTTP ' + r.status + ').');   // 409: it had ended
  } catch (_) {
    showError(p, 'Not stopped: server unreachable.');
  } finally {
    p.stop.disabled = false;
    draw(p);
  }
}

// The stream's last word: the whole text and its figures, or why there is none.
async function ended(p, text, s) {
  let j = s.job;
  if (!j || !TERMINAL.has(j.state)) {
    text.dataset.state = 'cut';
    showError(p, 'The stream ended before the text was done' + (j ? ': see job #' + j.id + '.' : '.'));
    return;
  }
  // An event leaves out a result too big for it; the job has it.
  if (j.state === 'succeeded' && !j.result) j = await getJSON(API + '/jobs/' + j.id);
  text.dataset.state = j.state;
  if (j.state === 'cancelled') {            // Stop: what it wrote stays
    setText(p.stats, 'Stopped after ' + fmtQty(s.n) + ' characters (job #' + j.id + ').');
    return;
  }
  if (j.state !== 'succeeded') {
    setText(p.stats, '');
    showError(p, 'Job #' + j.id + ' ' + j.state + (j.error ? ': ' + (j.error.code || '') + ' ' +
      (j.error.message || '') : '.'));
    return;
  }
  const r = j.result;
  if (typeof r.text === 'string' && r.text !== text.textContent) {
    text.replaceChildren(...generatedText(r.prompt, r.completion).childNodes);
  }
  setText(p.stats, generateStats(r) + ' (job #' + j.id + ')');
}
