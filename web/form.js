// form.js: the "New job" panel and the "Run XOR example" button: templates that fill the JSON
// spec, the inputs that patch their field of it, the submit, and a rejection's message put next
// to the input (or the spec text) that owns the field the API names.

import {API, api, errText} from './api.js';
import {$, el} from './dom.js';
import {showJob} from './jobs.js';
import {flagToken, unflagToken} from './session.js';

// The canonical XOR job (examples/jobs/xor.json); only web/ is embedded, so the dashboard
// carries its own copy.
const XOR_SPEC = {
  kind: 'train', name: 'xor', device: 'auto', seed: 1,
  model: {type: 'mlp', layers: [2, 8, 2], activation: 'relu'},
  data: {source: 'xor'},
  optimizer: {type: 'sgd', lr: 0.1, momentum: 0.9},
  batch_size: 4, epochs: 100,
};

// The "New job" panel: a template fills the JSON spec (examples/jobs/*.json,
// examples/inet/fib.hvm and examples/lang/fib.pgl, copied: only web/ is embedded), the inputs beside it patch their field
// of that spec, and the spec as edited is what is sent. A 400 names the field (a JSON path); the
// message goes next to the input that owns that field, else under the spec with the path
// highlighted.

const FIB_HVM = `// fib(n), the doubly recursive way: fib(0) = 0, fib(1) = 1, fib(n) = fib(n-1) + fib(n-2).
// A switch on n peels one step (?(zero succ)); the successor case gets n-1 and switches again,
// so @fib_ss receives q = n-2, duplicates it, and adds fib(q+1) and fib(q). The two recursive
// calls are independent: plenty of parallel work, and CALL, SWIT, OPER and DUP copies of numbers.
@fib = (?((0 @fib_s) r) r)
@fib_s = (?((1 @fib_ss) r) r)
@fib_ss = ({q0 q1} r)
  & q0 ~ $([+1] a)
  & @fib ~ (a x)
  & @fib ~ (q1 y)
  & x ~ $([+] $(y r))

@main = r & @fib ~ (22 r)
`;

const FIB_PGL = `// fib(n), the doubly recursive way, in pgl (docs/language.md). A switch takes its numbered
// cases first; \`_ k\` names the value less the cases (here n - 2). The two calls are
// independent: parallel work.
fib(n) = switch n {
  0: 0
  1: 1
  _ k: fib(k) + fib(k + 1)
}

main = fib(22)
`;
const EXAMPLES = {hvm: FIB_HVM, pgl: FIB_PGL};

// examples/inet/train_xor.pgl as it is (test_lang checks that this is its text): XOR's network
// trained by interaction nets.
const TRAIN_XOR_PGL = `// XOR, a 2-8-2 network trained by interaction nets: ReLU, softmax cross-entropy, full-batch SGD
// with momentum (lr 0.1, momentum 0.9) for 100 steps, as examples/jobs/xor.json trains it with
// the tensor engine, from the same initial weights (that spec's seed 1: tests/test_lang.c checks
// them against the engine's), in f24 arithmetic. Each step is one net: the four samples'
// gradients summed as a tree, then the update. main is (the last step's loss, samples right);
// the tensor engine's run gives 0.0066207736 and 4 (test_lang compares them).

// ---- vectors (lists of numbers) and matrices (lists of rows) ----
add(a, b) = match a { Nil: []; Cons(x, at): match b { Nil: []; Cons(y, bt): Cons(x + y, add(at, bt)) } }
scale(s, v) = match v { Nil: []; Cons(x, t): Cons(s * x, scale(s, t)) }
dot(a, b) = match a { Nil: 0.0; Cons(x, at): match b { Nil: 0.0; Cons(y, bt): x * y + dot(at, bt) } }
madd(a, b) = match a { Nil: []; Cons(r, at): match b { Nil: []; Cons(s, bt): Cons(add(r, s), madd(at, bt)) } }
relu(v) = match v { Nil: []; Cons(x, t): Cons(switch x > 0.0 { 0: 0.0; _: x }, relu(t)) }
// the rows of w weighted by v and summed: v w
vecmat(v, w) = match v { Nil: [0.0, 0.0]; Cons(x, vt): match w { Nil: [0.0, 0.0]; Cons(r, wt): add(scale(x, r), vecmat(vt, wt)) } }
// each row of w dotted with d: w d
matvec(w, d) = match w { Nil: []; Cons(r, wt): Cons(dot(r, d), matvec(wt, d)) }
// the rows h_j d: h^T d
outer(h, d) = match h { Nil: []; Cons(x, t): Cons(scale(x, d), outer(t, d)) }
// dh masked by z > 0
mask(dh, z) = match dh { Nil: []; Cons(g, gt): match z { Nil: []; Cons(x, zt): Cons(switch x > 0.0 { 0: 0.0; _: g }, mask(gt, zt)) } }

e = 2.7182817
// softmax of two logits, less the one-hot label, over the batch of 4; and the sample's loss
dlogits(l, y) = let (l0, l1) = l; let m = (e ^ (l1 - l0)); let p0 = 1.0 / (1.0 + m); let p1 = m / (1.0 + m);
  switch y { 0: ([(p0 - 1.0) / 4.0, p1 / 4.0], 0.0 - (e | p0)); _: ([p0 / 4.0, (p1 - 1.0) / 4.0], 0.0 - (e | p1)) }
pair(v) = match v { Nil: (0.0, 0.0); Cons(a, t): match t { Nil: (a, 0.0); Cons(b, r): (a, b) } }

// one sample's gradients (dw1, db1, dw2, db2), its loss and whether it was right
grad(p, x0, x1, y) =
  let (w1, b1, w2, b2) = p;
  let (r0, r1) = pair2(w1);
  let z1 = add(b1, add(scale(x0, r0), scale(x1, r1)));
  let h = relu(z1);
  let l = add(b2, vecmat(h, w2));
  let (d, loss) = dlogits(pair(l), y);
  let (l0, l1) = pair(l);
  let right = switch y { 0: l0 > l1; _: l1 > l0 };
  let dz1 = mask(matvec(w2, d), z1);
  ((Cons(scale(x0, dz1), Cons(scale(x1, dz1), Nil)), dz1, outer(h, d), d), loss, right)
pair2(w) = match w { Nil: ([], []); Cons(a, t): match t { Nil: (a, []); Cons(b, r): (a, b) } }

gsum(a, b) = let (aw1, ab1, aw2, ab2) = a; let (bw1, bb1, bw2, bb2) = b;
  (madd(aw1, bw1), add(ab1, bb1), madd(aw2, bw2), add(ab2, bb2))
// the four samples' gradients summed as a tree, their loss and correct answers
batch(p) =
  let (p0, p1) = dup2(p); let (p2, p3) = dup2(p1); let (p4, p5) = dup2(p3);
  let (g0, l0, c0) = grad(p0, 0.0, 0.0, 0); let (g1, l1, c1) = grad(p2, 0.0, 1.0, 1);
  let (g2, l2, c2) = grad(p4, 1.0, 0.0, 1); let (g3, l3, c3) = grad(p5, 1.0, 1.0, 0);
  (gsum(gsum(g0, g1), gsum(g2, g3)), (l0 + l1 + l2 + l3) / 4.0, c0 + c1 + c2 + c3)
dup2(p) = (p, p)

// momentum: v = 0.9 v + g, w = w - 0.1 v
vmom(v, g) = match v { Nil: []; Cons(a, at): match g { Nil: []; Cons(b, bt): Cons(0.9 * a + b, vmom(at, bt)) } }
vstep(w, v) = match w { Nil: []; Cons(a, at): match v { Nil: []; Cons(b, bt): Cons(a - 0.1 * b, vstep(at, bt)) } }
mmom(v, g) = match v { Nil: []; Cons(a, at): match g { Nil: []; Cons(b, bt): Cons(vmom(a, b), mmom(at, bt)) } }
mstep(w, v) = match w { Nil: []; Cons(a, at): match v { Nil: []; Cons(b, bt): Cons(vstep(a, b), mstep(at, bt)) } }

step(p, v) =
  let (g, loss, right) = batch(p);
  let (gw1, gb1, gw2, gb2) = g; let (vw1, vb1, vw2, vb2) = v; let (w1, b1, w2, b2) = p;
  let nw1 = mmom(vw1, gw1); let nb1 = vmom(vb1, gb1); let nw2 = mmom(vw2, gw2); let nb2 = vmom(vb2, gb2);
  let (nw1a, nw1b) = (nw1, nw1); let (nb1a, nb1b) = (nb1, nb1); let (nw2a, nw2b) = (nw2, nw2); let (nb2a, nb2b) = (nb2, nb2);
  ((mstep(w1, nw1a), vstep(b1, nb1a), mstep(w2, nw2a), vstep(b2, nb2a)), (nw1b, nb1b, nw2b, nb2b), loss, right)

train(n, p, v, loss, right) = switch n {
  0: (loss, right)
  _ k: let (np, nv, l, r) = step(p, v); train(k, np, nv, l, r)
}

zeros8 = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
zeros2 = [0.0, 0.0]
init = ([[0.619524002, -0.484464198, 0.320580989, 0.260993093, 0.397798896, -0.0761204138, 0.241555139, 0.272762418],
         [0.328624368, -0.127004981, -0.383280218, 0.365368068, -0.464316905, -0.481162757, 0.269205064, 0.0601824969]],
        [-0.203674227, 0.234115034, -0.434907347, -0.278454542, -0.600203812, 0.312314212, -0.168909475, 0.597170353],
        [[0.0367335081, 0.228269264], [-0.146769568, 0.300867558], [-0.120708615, -0.247422606], [-0.301708847, -0.0699021518],
         [0.324355572, 0.157516927], [0.290338725, -0.111513689], [0.326842904, 0.170377955], [-0.347508639, -0.0229001939]],
        [-0.153732181, 0.0733551979])
velocity = ([zeros8, zeros8], zeros8, [zeros2, zeros2, zeros2, zeros2, zeros2, zeros2, zeros2, zeros2], zeros2)

main = train(100, init, velocity, 0.0, 0)
`;

const TEMPLATES = {
  xor: {group: 'train', spec: () => XOR_SPEC},
  'fashion-mlp': {group: 'train', spec: () => ({
    kind: 'train', name: 'fashion-mlp', device: 'auto', seed: 0,
    model: {type: 'mlp', layers: [784, 256, 256, 10], activation: 'relu'},
    data: {source: 'fashion-mnist'},
    optimizer: {type: 'sgd', lr: 0.05, momentum: 0.9},
    batch_size: 128, epochs: 5, checkpoint_every: 1,
  })},
  // nanoGPT's Shakespeare-character size (examples/jobs/gpt-small.json): offered where a GPU is
  'gpt-small': {group: 'gpt', spec: () => ({
    kind: 'train', name: 'gpt-small', device: 'auto', seed: 0,
    model: {type: 'gpt', n_layer: 6, n_head: 6, d_model: 384, context: 256, dropout: 0,
      tie_embeddings: true},
    data: {source: 'fortunes'},
    optimizer: {type: 'adamw', lr: 0.001, beta2: 0.99, weight_decay: 0.1, clip_norm: 1.0,
      schedule: 'cosine', warmup_steps: 100, min_lr: 0.0001},
    batch_size: 64, steps: 5000, log_every: 10, eval_every: 250, eval_windows: 200,
    checkpoint_every: 250,
  })},
  'char-gpt': {group: 'gpt', spec: () => ({
    kind: 'train', name: 'char-gpt', device: 'auto', seed: 0,
    model: {type: 'gpt', n_layer: 4, n_head: 4, d_model: 128, context: 64, dropout: 0,
      tie_embeddings: true},
    data: {source: 'fortunes'},
    optimizer: {type: 'adamw', lr: 0.001, weight_decay: 0.01, clip_norm: 1.0, schedule: 'cosine',
      warmup_steps: 100, min_lr: 0.0001},
    batch_size: 32, steps: 2000, log_every: 10, eval_every: 200, eval_windows: 128,
    checkpoint_every: 200,
  })},
  inet: {group: 'inet', spec: () => ({kind: 'inet', name: 'fib', device: 'auto',
    language: $('language').value, program: $('program').value})},
  'xor-inet': {group: 'inet', program: {language: 'pgl', text: TRAIN_XOR_PGL},
    spec: () => ({kind: 'inet', name: 'train-xor', device: 'auto', language: $('language').value,
      program: $('program').value})},
  bench: {group: 'bench', spec: () => ({kind: 'bench', suite: $('suite').value, device: 'all'})},
};

// Which form input owns a spec field: its own error slot, and the spec key it patches.
const FIELD_INPUTS = {epochs: 'epochs', steps: 'steps', program: 'program', suite: 'suite'};
// The count a template group's number input shows and patches: how long the job trains.
const LENGTH_INPUTS = {train: 'epochs', gpt: 'steps'};

let sayTimer = 0;           // hides an 'ok' message after a while

function say(text, kind) {
  const m = $('submit-msg');
  clearTimeout(sayTimer);
  m.textContent = text;
  m.className = 'submit-msg' + (kind ? ' ' + kind : '');
  m.hidden = !text;
  if (kind === 'ok') sayTimer = setTimeout(() => { m.textContent = ''; m.hidden = true; }, 8000);
}

function clearFormErrors() {
  const e = $('submit-error');
  e.hidden = true;
  e.textContent = '';
  for (const f of Object.values(FIELD_INPUTS)) {
    const m = $(f + '-error');
    m.hidden = true;
    m.textContent = '';
    $(f).classList.remove('invalid');
    $(f).removeAttribute('aria-invalid');
  }
  $('spec').classList.remove('invalid');
}

function formError(parts) {
  const e = $('submit-error');
  e.textContent = '';
  for (const p of parts) e.append(typeof p === 'string' ? document.createTextNode(p) : p);
  e.hidden = false;
}

function readSpec() {
  try { const v = JSON.parse($('spec').value); return v && typeof v === 'object' ? v : null; } catch (_) { return null; }
}

// Pretty JSON with arrays of numbers on one line ("layers": [2, 8, 2]); a raw newline is
// only ever formatting, never inside a JSON string, so the pattern cannot touch a string.
function writeSpec(v) {
  $('spec').value = JSON.stringify(v, null, 2).replace(/\[\n\s*(-?[\d.eE+-]+(?:,\n\s*-?[\d.eE+-]+)*)\n\s*\]/g,
    (_, inner) => '[' + inner.split(/,\n\s*/).join(', ') + ']');
}

// The name a program gives its job: its first definition other than main (pgl's `fib(n) = ...`,
// HVM2's `@fib = ...`), or null.
function programName(text, language) {
  const re = language === 'hvm' ? /^@([A-Za-z0-9_.-]+)\s*=/gm : /^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(|=)/gm;
  for (const m of text.matchAll(re)) if (m[1] !== 'main') return m[1];
  return null;
}

// The job's name follows the program while nobody has typed one: it is the template's, or one
// this followed before.
let followedName = null;
function followProgramName() {
  const v = readSpec();
  const own = v && TEMPLATES[$('template').value] && TEMPLATES[$('template').value].spec().name;
  if (!v || (v.name !== own && v.name !== followedName)) return;
  const n = programName($('program').value, $('language').value);
  if (n && n !== v.name) {
    patchSpec('name', n);
    followedName = n;
  }
}

// A template's spec, its inputs shown and filled from it.
function applyTemplate(name) {
  const t = TEMPLATES[name] || TEMPLATES.xor;
  for (const e of document.querySelectorAll('.tpl')) e.hidden = !e.classList.contains('tpl-' + t.group);
  if (t.program) {                    // a template with its own program
    $('language').value = t.program.language;
    $('program').value = t.program.text;
  } else if (t.group === 'inet' && $('program').value === TRAIN_XOR_PGL) {
    $('program').value = EXAMPLES[$('language').value];
  }
  const spec = JSON.parse(JSON.stringify(t.spec()));
  const len = LENGTH_INPUTS[t.group];
  if (len) $(len).value = String(spec[len]);
  writeSpec(spec);
  clearFormErrors();
}

// An input changed: set its field in the spec as edited (or, when that no longer parses,
// in a fresh copy of the template's).
function patchSpec(key, value) {
  const v = readSpec() || JSON.parse(JSON.stringify(TEMPLATES[$('template').value].spec()));
  v[key] = value;
  writeSpec(v);
}

// The spec's text span for a JSON path like "model.layers[1]": the last key's name, at the
// nesting its path implies when that can be found, else anywhere.
function specSpan(text, path) {
  const keys = String(path).split('.').map((k) => k.replace(/\[\d+\]/g, '')).filter(Boolean);
  let from = 0;
  for (const k of keys) {
    const at = text.indexOf('"' + k + '"', from);
    if (at < 0) return null;
    from = at;
  }
  const last = keys[keys.length - 1];
  return last ? [from, from + last.length + 2] : null;
}

async function submitSpec(body, how) {
  clearFormErrors();
  say('');
  const btn = $('submit-job');
  btn.disabled = true;
  $('run-xor').disabled = true;
  try {
    const r = await api(API + '/jobs', {method: 'POST',
      headers: {'Content-Type': 'application/json'}, body});
    if (r.ok) {
      let id = r.body && r.body.id;
      if (id == null) {
        const m = /\/jobs\/(\d+)\s*$/.exec(r.headers.get('Location') || '');
        id = m ? Number(m[1]) : null;
      }
      const ids = r.body && Array.isArray(r.body.ids) && r.body.ids.length > 1 ? r.body.ids : null;
      say((id != null ? 'Submitted job #' + id : 'Submitted') + (ids ? ' (jobs #' + ids.join(', #') + ')' : ''), 'ok');
      unflagToken();
      showJob(id);
      return;
    }
    const e = r.body && r.body.error, f = e && e.field;
    if (r.status === 401) {
      formError(['The server needs the API token to run jobs: paste the contents of paragond\'s ' +
        'token file (it prints where; by default data/token) into "API token" at the top. (' + errText(r) + ')']);
      flagToken();
      return;
    }
    const where = f && how === 'form' ? FIELD_INPUTS[String(f).split(/[.[]/)[0]] : null;
    if (where && !$(where).closest('.tpl').hidden) {
      const m = $(where + '-error');
      m.textContent = e.message || errText(r);
      m.hidden = false;
      $(where).classList.add('invalid');
      $(where).setAttribute('aria-invalid', 'true');
      formError(['Rejected (HTTP ' + r.status + (e.code ? ', ' + e.code : '') + '): see ',
        el('code', 'field-path', f), ' above.']);
      $(where).focus();
      return;
    }
    const parts = ['Rejected (HTTP ' + r.status + '): ' + errText(r)];
    if (f) parts.push(' \u2014 field ', el('mark', 'field-path', f));
    formError(parts);
    if (f && how === 'form') {
      const ta = $('spec');
      ta.classList.add('invalid');
      const span = specSpan(ta.value, f);
      if (span) {
        ta.focus();
        ta.setSelectionRange(span[0], span[1]);
        const line = ta.value.slice(0, span[0]).split('\n').length - 1;
        const lh = parseFloat(getComputedStyle(ta).lineHeight) || 17;
        ta.scrollTop = Math.max(0, line * lh - ta.clientHeight / 3);
      }
    }
  } catch (e) {
    formError(['Could not submit: ' + (e.name === 'AbortError' ? 'timed out' : 'server unreachable')]);
  } finally {
    btn.disabled = false;
    $('run-xor').disabled = false;
  }
}

function submitForm(ev) {
  ev.preventDefault();
  const text = $('spec').value;
  try { JSON.parse(text); } catch (e) {
    clearFormErrors();
    $('spec').classList.add('invalid');
    formError(['The spec is not valid JSON: ' + e.message]);
    return;
  }
  submitSpec(text, 'form');
}

// The one-click XOR run: the canonical spec whatever the form holds.
function runXor() { submitSpec(JSON.stringify(XOR_SPEC), 'button'); }

// The templates a device list makes sensible: gpt-small where a GPU is (on two CPU cores one of
// its steps takes seconds).
export function offerTemplates(devices) {
  const opt = $('template').querySelector('option[value="gpt-small"]');
  if (opt) opt.hidden = !devices.some((d) => d.type === 'gpu');
}

export function initForm() {
  $('run-xor').addEventListener('click', runXor);
  $('template').addEventListener('change', (e) => applyTemplate(e.target.value));
  $('reset-spec').addEventListener('click', () => applyTemplate($('template').value));
  $('job-form').addEventListener('submit', submitForm);
  for (const key of Object.values(LENGTH_INPUTS)) {
    $(key).addEventListener('input', (e) => {
      const n = Number(e.target.value);
      patchSpec(key, e.target.value.trim() !== '' && Number.isFinite(n) ? n : e.target.value);
    });
  }
  $('program').addEventListener('input', (e) => {
    patchSpec('program', e.target.value);
    followProgramName();
  });
  $('language').addEventListener('change', (e) => {   // the other language's example, unless edited
    if (Object.values(EXAMPLES).includes($('program').value)) $('program').value = EXAMPLES[e.target.value];
    patchSpec('language', e.target.value);
    patchSpec('program', $('program').value);
  });
  $('suite').addEventListener('change', (e) => patchSpec('suite', e.target.value));
  $('program-file').addEventListener('change', async (e) => {
    const f = e.target.files && e.target.files[0];
    if (!f) return;
    try {
      $('program').value = await f.text();
      const v = readSpec() || {};
      if (/\.(pgl|hvm)$/.test(f.name)) {
        $('language').value = f.name.endsWith('.pgl') ? 'pgl' : 'hvm';
        patchSpec('language', $('language').value);
      }
      patchSpec('program', $('program').value);
      if (!v.name || v.name === 'fib') patchSpec('name', f.name.replace(/\.(hvm|pgl)$/, ''));
    } catch (err) {
      formError(['Could not read ' + f.name + ': ' + err.message]);
    }
  });
  $('spec').addEventListener('input', () => $('spec').classList.remove('invalid'));
  if (!$('program').value) $('program').value = EXAMPLES[$('language').value];
  applyTemplate($('template').value);   // the browser may restore the last template chosen
}
