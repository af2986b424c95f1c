// dashboard.mjs: the dashboard in a real browser. Starts paragond on a free port with a fresh
// database, opens the page in headless Chromium (Debian's, driven by playwright-core; nothing is
// downloaded), submits the XOR template through the form, and waits until the job is listed,
// its chart has points from the live event stream, and its state reads succeeded. Two
// scenarios: on loopback with the token already saved (as run.sh's #token= link leaves it), and
// with --host 0.0.0.0 and no token, where the page must ask for it, take it from the token box,
// and open the session whose cookie lets the event stream and the checkpoint link in. In both,
// the page loads every module of web/ and nothing else, each as JavaScript. On loopback a tiny
// character GPT follows through the form: its training and validation curves, refusals beside
// the field they name, and text streamed from its checkpoint; and, where paragon-rank is built
// beside paragond, a DiLoCo job on two ranks shows its ranks table. Saves screenshots to
// tests/browser/screenshots/. Run by `meson test` (browser_dashboard); needs `npm ci` in
// tests/browser (scripts/install-deps.sh --test does it).
import {spawn} from 'node:child_process';
import {existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const paragond = process.env.PARAGOND;
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const STEP_MS = 60000;

let chromium;
try {
  ({chromium} = await import('playwright-core'));
} catch (e) {
  fail('playwright-core is not installed: run `npm ci` in tests/browser (scripts/install-deps.sh --test does)');
}
if (!paragond) fail('PARAGOND (the paragond binary) is not set: run through `meson test`');

// Before anything is started: say why and stop.
function fail(msg) {
  console.error('browser test: ' + msg);
  console.log('[====] Synthesis: Tested: 1 | Passing: 0 | Failing: 1 | Crashing: 0');
  process.exit(1);
}

// paragond on a free port of host; resolves with its port once it prints its listening line.
function startServer(dir, host) {
  const proc = spawn(paragond, ['--host', host, '--port', '0', '--db', join(dir, 'p.db'),
    '--data-dir', join(dir, 'data'), '--no-calibration'], {stdio: ['ignore', 'pipe', 'inherit']});
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('paragond did not start')), STEP_MS);
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const m = new RegExp('listening on http://' + host.replace(/\./g, '\\.') + ':(\\d+)').exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({proc, port: Number(m[1]), data: join(dir, 'data')});
      }
    });
    proc.on('exit', (code) => reject(new Error('paragond exited with ' + code)));
  });
}

// Submits the XOR template through the form and waits until the job is listed, its chart has
// points and its state reads succeeded; returns the loss chart's point count, training and test.
async function trainXor(page) {
  await page.waitForSelector('#template', {timeout: STEP_MS});
  const xor = await page.$eval('#template', (sel) =>
    [...sel.options].find((o) => /xor/i.test(o.textContent + ' ' + o.value))?.value);
  if (!xor) throw new Error('no XOR template in #template');
  await page.selectOption('#template', xor);
  await page.click('#submit-job');
  await page.waitForSelector('#jobs-body tr', {timeout: STEP_MS});
  await page.waitForFunction(() => {
    const c = document.querySelector('.chart[data-points]');
    return c && Number(c.getAttribute('data-points')) > 0;
  }, null, {timeout: STEP_MS});
  await page.waitForFunction(() => /succeeded/.test(document.querySelector('#job-state')?.textContent || ''),
    null, {timeout: STEP_MS});
  await waitForCurves(page, {loss: 100, test_loss: 100});
  return page.$eval('.chart[data-points]', (c) => Number(c.getAttribute('data-points')));
}

// Until each series named in want is drawn as a line of that many points: its path's own count
// and the segments of its outline.
async function waitForCurves(page, want) {
  const drawn = () => page.evaluate((names) => Object.fromEntries(names.map((n) => {
    const p = document.querySelector(`.chart path[data-series="${n}"]`);
    return [n, p ? [Number(p.dataset.points), (p.getAttribute('d').match(/[ML]/g) || []).length] : null];
  })), Object.keys(want));
  await page.waitForFunction((w) => Object.entries(w).every(([n, k]) =>
    Number(document.querySelector(`.chart path[data-series="${n}"]`)?.dataset.points) === k),
  want, {timeout: STEP_MS}).catch(async () => {
    throw new Error('curves drawn ' + JSON.stringify(await drawn()) + ', wanted ' + JSON.stringify(want));
  });
  for (const [n, [points, segments]] of Object.entries(await drawn())) {
    if (segments !== points) throw new Error(`the ${n} curve has ${segments} segments for ${points} points`);
  }
}

// A tiny character GPT (examples/jobs/char-gpt.json, scaled down) on a text written into the
// server's datasets directory: 30 steps, the training loss every 5 and the validation loss
// every 10.
const TINY_TEXT = 'the quick brown fox jumps over the lazy dog. '.repeat(40);
const TINY_GPT = {
  kind: 'train', name: 'tiny-gpt', device: 'auto', seed: 1,
  model: {type: 'gpt', n_layer: 1, n_head: 2, d_model: 16, context: 8},
  data: {source: 'text', path: 'tiny.txt'},
  optimizer: {type: 'adamw', lr: 0.01},
  batch_size: 4, steps: 30, log_every: 5, eval_every: 10, eval_windows: 8, checkpoint_every: 10,
};
const PROMPT = 'the lazy', MAX_TOKENS = 40;

// The GPT template refused beside its steps input, then the tiny GPT submitted from the form
// and trained: both curves drawn. Then text: a prompt the model cannot read is refused beside
// the prompt box; one it can streams in a character at a time. Returns what it saw.
async function gptFromTheForm(page, server) {
  mkdirSync(join(server.data, 'datasets'), {recursive: true});
  writeFileSync(join(server.data, 'datasets', 'tiny.txt'), TINY_TEXT);
  await page.selectOption('#template', 'char-gpt');
  await page.fill('#steps', '0');
  await page.click('#submit-job');
  await page.waitForFunction(() => {
    const e = document.querySelector('#steps-error');
    return e && !e.hidden && /steps/.test(e.textContent) &&
      document.querySelector('#steps').classList.contains('invalid');
  }, null, {timeout: STEP_MS});
  await page.fill('#spec', JSON.stringify(TINY_GPT, null, 2));
  await page.click('#submit-job');
  await waitForCurves(page, {loss: 6, val_loss: 3, val_accuracy: 3});
  await page.waitForFunction(() => /succeeded/.test(document.querySelector('#job-state')?.textContent || ''),
    null, {timeout: STEP_MS});
  await page.waitForSelector('#generate:not([disabled])', {timeout: STEP_MS});

  await page.fill('#gen-prompt', 'THE LAZY');
  await page.click('#generate');
  await page.waitForFunction(() => !document.querySelector('#gen-error').hidden &&
    document.querySelector('#gen-prompt').classList.contains('invalid'), null, {timeout: STEP_MS});
  const refused = await page.$eval('#gen-error', (e) => e.textContent);
  if (!/prompt/.test(refused) || !/vocabulary/.test(refused)) throw new Error('prompt refused as: ' + refused);

  await page.fill('#gen-prompt', PROMPT);
  await page.fill('#gen-max-tokens', String(MAX_TOKENS));
  // Every count the streamed text went through (one per character if it streamed), and how
  // many times the page had the chance to draw in between.
  await page.evaluate(() => {
    window.streamed = {counts: [], batches: 0};
    new MutationObserver((records) => {
      window.streamed.batches++;
      for (const r of records) window.streamed.counts.push(r.oldValue);
    }).observe(document.querySelector('.gen-out'), {subtree: true, attributeOldValue: true,
      attributeFilter: ['data-tokens']});
  });
  await page.click('#generate');
  await page.waitForSelector('.generate .gen-text[data-state="succeeded"]', {timeout: STEP_MS});
  if (await page.$eval('#gen-error', (e) => !e.hidden)) throw new Error('generate error shown after a good prompt');
  const text = await page.$eval('.generate .gen-text', (e) => e.textContent);
  const {counts, batches} = await page.evaluate(() => window.streamed);
  const stats = await page.$eval('#gen-stats', (e) => e.textContent);
  if (!text.startsWith(PROMPT) || [...text].length !== [...PROMPT].length + MAX_TOKENS)
    throw new Error('generated text: ' + JSON.stringify(text));
  if (counts.join() !== Array.from({length: MAX_TOKENS}, (_, i) => String(i)).join())
    throw new Error('the text did not stream a character at a time: counts ' + counts.join());
  if (!/tokens\/s/.test(stats)) throw new Error('no tokens/s after generating: ' + stats);
  // The generate job joins the list with the start of its text.
  await page.waitForFunction((p) => [...document.querySelectorAll('#jobs-body tr.job')].some((tr) =>
    tr.querySelector('.col-kind').textContent === 'generate' &&
    tr.querySelector('.col-result').textContent.startsWith('"' + p)), PROMPT, {timeout: STEP_MS})
    .catch(async () => {
      throw new Error('no generate job listed with its text: ' + JSON.stringify(await page.$$eval('#jobs-body tr.job',
        (trs) => trs.map((tr) => tr.textContent))));
    });
  mkdirSync(join(here, 'screenshots'), {recursive: true});
  await page.locator('tr.detail').screenshot({path: join(here, 'screenshots', 'dashboard-gpt.png')});
  return `GPT refused beside #steps, trained from the form with both curves drawn, "${text}" ` +
    `streamed a character at a time (in ${batches} batches: ${stats})`;
}

// A small DiLoCo job on two ranks (docs/distributed.md): a few hundred milliseconds of training
// after mpirun has started them.
const TINY_DILOCO = {
  kind: 'train', name: 'tiny-diloco', device: 'host', seed: 3,
  model: {type: 'mlp', layers: [2, 16, 3], activation: 'relu'},
  data: {source: 'spiral', samples: 60, classes: 3},
  optimizer: {type: 'adamw', lr: 0.01},
  batch_size: 16, epochs: 20, distributed: {ranks: 2, algorithm: 'diloco', inner_steps: 4},
};

// The distributed job submitted from the form: its detail shows the ranks line and a table of
// two rows, each with its device (from the result), loss and bytes sent, and a curve per rank.
// paragond starts ranks only where paragon-rank is built beside it (Open MPI found): else a skip.
async function distributedFromTheForm(page) {
  if (!existsSync(join(dirname(paragond), 'paragon-rank'))) return 'no paragon-rank beside paragond: ranks not tried';
  await page.fill('#spec', JSON.stringify(TINY_DILOCO, null, 2));
  await page.click('#submit-job');
  await page.waitForFunction(() => /succeeded/.test(document.querySelector('#job-state')?.textContent || '') &&
    document.querySelector('#ranks-table'), null, {timeout: STEP_MS});
  const rows = () => page.$$eval('#ranks-table tbody tr', (trs) => trs.map((tr) =>
    [...tr.cells].map((c) => c.textContent)));
  await page.waitForFunction(() => [...document.querySelectorAll('#ranks-table tbody tr')].every((tr) =>
    tr.cells[1].textContent === 'host'), null, {timeout: STEP_MS}).catch(async () => {
    throw new Error('ranks table without the ranks\' devices: ' + JSON.stringify(await rows()));
  });
  const seen = await rows();
  const summary = await page.$eval('#ranks-summary', (p) => p.textContent);
  if (seen.length !== 2 || seen.some(([rank, , loss, , sent], r) => rank !== String(r) ||
    !(Number(loss) > 0) || !/^[\d.]+ (B|KiB|MiB)$/.test(sent)))
    throw new Error('ranks table: ' + JSON.stringify(seen));
  if (!/^DiLoCo on 2 ranks, an outer step every 4 inner steps: \d+ outer steps; moving data took/.test(summary))
    throw new Error('ranks line: ' + summary);
  const curves = await page.$$eval('.ranks .chart path[data-series]', (ps) =>
    ps.map((p) => [p.dataset.series, Number(p.dataset.points)]));
  if (curves.map(([n]) => n).join() !== 'rank0.loss,rank1.loss' || curves.some(([, k]) => !(k > 0)))
    throw new Error('rank curves: ' + JSON.stringify(curves));
  mkdirSync(join(here, 'screenshots'), {recursive: true});
  await page.locator('tr.detail').screenshot({path: join(here, 'screenshots', 'dashboard-ranks.png')});
  return `DiLoCo on 2 ranks from the form: "${summary}", ${seen.length} rows (${seen.map((r) => r.join(' ')).join('; ')})`;
}

// One paragond and one browser page for a scenario; run(page, server, token) does the rest.
async function scenario(browser, host, name, run) {
  const dir = mkdtempSync(join(tmpdir(), 'paragon-browser-'));
  let server, context;
  try {
    server = await startServer(dir, host);
    const token = readFileSync(join(dir, 'data', 'token'), 'utf8').trim();
    context = await browser.newContext({viewport: {width: 1280, height: 1400}});
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const scripts = new Map();   // path -> "status content-type" of every script the page loaded
    page.on('response', (r) => {
      if (r.request().resourceType() === 'script')
        scripts.set(new URL(r.url()).pathname, r.status() + ' ' + r.headers()['content-type']);
    });
    const said = await run(page, server, token, context);
    checkScripts(scripts);
    mkdirSync(join(here, 'screenshots'), {recursive: true});
    await page.screenshot({path: join(here, 'screenshots', name + '.png'), fullPage: true});
    if (errors.length) throw new Error('page errors: ' + errors.join('; '));
    console.log('browser test (' + name + '): ' + said + '; screenshot in tests/browser/screenshots/' +
      name + '.png');
  } finally {
    if (context) await context.close();
    if (server) server.proc.kill('SIGTERM');
    rmSync(dir, {recursive: true, force: true});
  }
}

// The page runs on the modules of web/, every one of them (app.js and what it imports), each
// served as JavaScript: a module nothing imports would be dead code, one not served a blank page.
function checkScripts(scripts) {
  const web = readdirSync(join(here, '..', '..', 'web')).filter((f) => f.endsWith('.js')).sort();
  const loaded = [...scripts.keys()].map((p) => p.slice(1)).sort();
  if (JSON.stringify(loaded) !== JSON.stringify(web))
    throw new Error('the page loaded the scripts ' + loaded.join(', ') + '; web/ has ' + web.join(', '));
  for (const [path, how] of scripts) {
    if (how !== '200 text/javascript; charset=utf-8') throw new Error(path + ': ' + how);
  }
}

// On loopback, through the link run.sh prints: the token arrives in the fragment, is kept in
// local storage, leaves the address, and is traded for the session cookie.
async function onLoopback(page, server, token, context) {
  await page.goto(`http://127.0.0.1:${server.port}/#token=${token}`);
  await page.waitForFunction(() => location.hash === '', null, {timeout: STEP_MS});
  const kept = await page.evaluate(() => localStorage.getItem('paragon.token'));
  if (kept !== token) throw new Error('the #token= link did not store the token');
  const points = await trainXor(page);
  if (!(await context.cookies()).some((c) => c.name === 'paragon_session'))
    throw new Error('the #token= link opened no session');
  if (await page.$('#ranks')) throw new Error('a job on one process shows ranks');
  const gpt = await gptFromTheForm(page, server);
  const ranks = await distributedFromTheForm(page);
  return `token from the #token= link, XOR submitted from the form, ${points} chart points, state succeeded; ` +
    `${gpt}; ${ranks}`;
}

// Off loopback, no token saved: the page loads, says it needs the token, takes it from the
// box, and the job's event stream (which only the session cookie can open) carries the chart.
async function offLoopback(page, server, token, context) {
  const streams = [];   // [url, status] of every event stream the page opened
  page.on('response', (r) => { if (/\/events$/.test(r.url())) streams.push([r.url(), r.status()]); });
  const res = await page.goto(`http://127.0.0.1:${server.port}/`);
  if (res.status() !== 200) throw new Error('the page answered ' + res.status() + ' off loopback');
  await page.waitForFunction(() => {
    const b = document.querySelector('#banner');
    return b && !b.hidden && /needs the API token/.test(b.textContent) &&
      document.querySelector('label.token').classList.contains('attention');
  }, null, {timeout: STEP_MS});
  const asked = await page.$eval('#banner', (b) => b.textContent);
  if (await page.evaluate(() => document.activeElement?.id) !== 'token')
    throw new Error('the token box does not have the focus');
  mkdirSync(join(here, 'screenshots'), {recursive: true});
  await page.screenshot({path: join(here, 'screenshots', 'dashboard-asks-token.png')});

  // A wrong token first: the page says it was refused.
  await page.fill('#token', 'not-the-token-0123456789');
  await page.press('#token', 'Enter');
  await page.waitForFunction(() => /refused the API token/.test(document.querySelector('#banner').textContent),
    null, {timeout: STEP_MS});
  await page.fill('#token', token);
  await page.press('#token', 'Enter');
  await page.waitForFunction(() => document.querySelector('#banner').hidden &&
    document.querySelector('#devices .device') !== null,
  null, {timeout: STEP_MS}).catch(async () => {
    throw new Error('the data did not load after the token was entered; banner: ' +
      await page.$eval('#banner', (b) => b.hidden ? '(hidden)' : b.textContent));
  });
  const cookie = (await context.cookies()).find((c) => c.name === 'paragon_session');
  if (!cookie || !cookie.httpOnly || cookie.sameSite !== 'Strict' || cookie.value.includes(token))
    throw new Error('no HttpOnly SameSite=Strict session cookie: ' + JSON.stringify(cookie));

  const points = await trainXor(page);
  const jobStreams = streams.filter(([u]) => /\/jobs\/\d+\/events$/.test(u));
  if (!jobStreams.some(([, s]) => s === 200) || streams.some(([, s]) => s !== 200))
    throw new Error('the job\'s event stream did not open: ' + JSON.stringify(streams));
  // The checkpoint link, as a click would fetch it: the cookie, no header.
  const ckpt = await page.$eval('#checkpoint', (a) => fetch(a.href).then(async (r) =>
    [r.status, (await r.arrayBuffer()).byteLength]));
  if (ckpt[0] !== 200 || !(ckpt[1] > 0)) throw new Error('checkpoint link: ' + JSON.stringify(ckpt));
  return `asked "${asked.slice(0, 60)}...", token entered, session cookie set, XOR trained with ` +
    `${points} chart points over a live stream, checkpoint link ${ckpt[1]} bytes`;
}

let browser, failure = null;
try {
  browser = await chromium.launch({executablePath: chromiumPath, args: ['--no-sandbox']});
  await scenario(browser, '127.0.0.1', 'dashboard', onLoopback);
  await scenario(browser, '0.0.0.0', 'dashboard-off-loopback', offLoopback);
} catch (e) {
  failure = e.stack || String(e);
} finally {
  if (browser) await browser.close();
}
if (failure) fail(failure);
console.log('[====] Synthesis: Tested: 2 | Passing: 2 | Failing: 0 | Crashing: 0');
