// dashboard.mjs: the dashboard in a real browser. Starts paragond on a free port with a fresh
// database, opens the page in headless Chromium (Debian's, driven by playwright-core; nothing is
// downloaded), submits the XOR template through the form, and waits until the job is listed,
// its chart has points from the live event stream, and its state reads succeeded. Two
// scenarios: on loopback with the token already saved (as run.sh's #token= link leaves it), and
// with --host 0.0.0.0 and no token, where the page must ask for it, take it from the token box,
// and open the session whose cookie lets the event stream and the checkpoint link in. In both,
// the page loads every module of web/ and nothing else, each as JavaScript. On loopback XOR's
// charts are pointed at (training and test curves by step, hover values, drag to zoom and
// double-click back); a tiny character GPT follows through the form: its training and validation
// curves, refusals beside the field they name, and text streamed from its checkpoint; where
// paragon-rank is built beside paragond, a DiLoCo job on two ranks shows its ranks table; and a
// fresh page opened at a job's address (#/jobs/ID, off the list's first page) shows its detail
// and the devices' utilisation paragond kept. Saves screenshots to
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

// The XOR job's charts, by optimizer step with its epochs marked: training and test curves with a
// legend that names them, a hover that shows a guide and each curve's value at the nearest step,
// a drag that zooms both charts to the same steps, and a double-click that shows them all again.
// Returns what it saw.
async function chartInteractions(page) {
  // a train job's detail offers its weights in PyTorch's layout beside the checkpoint
  if (await page.$eval('#weights', (a) => a.hidden || !/\/api\/v1\/jobs\/\d+\/weights$/.test(a.href)))
    throw new Error('no Download weights on the train job\'s detail');
  const charts = await page.$$eval('tr.detail .chart-box', (boxes) => boxes.map((b) => ({
    title: b.querySelector('.chart-title').textContent,
    x: b.querySelector('.c-xname')?.textContent,
    legend: [...b.querySelectorAll('.chart-key')].map((k) => [k.dataset.series, k.textContent]),
    curves: [...b.querySelectorAll('path[data-series]')].map((p) => p.dataset.series),
    marks: b.querySelectorAll('[data-mark]').length,
  })));
  const want = {Loss: ['step_loss', 'loss', 'test_loss'], Accuracy: ['accuracy', 'test_accuracy']};
  // then every other figure it records, by step: its throughput
  const rate = charts.pop();
  if (!rate || rate.title !== 'Samples per second' || rate.x !== 'step' || rate.curves.join() !== 'samples_per_second')
    throw new Error('charts: ' + JSON.stringify([...charts, rate]));
  if (charts.length !== 2 || charts.some((c) => c.x !== 'step' || !(c.marks > 0) ||
      c.curves.join() !== want[c.title].join() || c.legend.map(([n]) => n).join() !== want[c.title].join() ||
      !c.legend.some(([, t]) => /^training/.test(t)) || !c.legend.some(([n, t]) => /^test_/.test(n) && /^test \S/.test(t))))
    throw new Error('charts: ' + JSON.stringify(charts));

  // The form's "Submitted job #N" goes away after a few seconds, moving the list up: pointing at a
  // chart waits for it, so that the chart stays under the pointer.
  await page.waitForSelector('#submit-msg', {state: 'hidden', timeout: STEP_MS});
  const box = page.locator('tr.detail .chart-box').first();
  const chart = box.locator('svg.chart');
  // The plot area's edges in the chart's own pixels, from its viewBox and grid lines (its top,
  // middle and bottom values); `at(fx)` a point across it, fx from 0 (left) to 1 (right), halfway
  // down. The locator's hover and dblclick place the pointer on the chart as it is laid out then,
  // whatever has moved the page meanwhile (a message above the list going away).
  const p = await chart.evaluate((s) => {
    const b = s.getBoundingClientRect(), vb = s.viewBox.baseVal;
    const grid = [...s.querySelectorAll('.c-grid')].map((l) => [l.x1.baseVal.value, l.x2.baseVal.value,
      l.y1.baseVal.value]);
    const sx = b.width / vb.width, sy = b.height / vb.height, ys = grid.map((g) => g[2]);
    return {left: grid[0][0] * sx, right: grid[0][1] * sx, top: Math.min(...ys) * sy, bottom: Math.max(...ys) * sy};
  });
  const at = (fx) => ({position: {x: p.left + (p.right - p.left) * fx, y: (p.top + p.bottom) / 2}});
  const range = () => page.$$eval('tr.detail svg.chart', (ss) => ss.map((s) => [Number(s.dataset.x0),
    Number(s.dataset.x1), s.dataset.zoomed]));
  await chart.hover(at(0.5));
  await box.locator('.chart-tip:not([hidden])').waitFor({timeout: STEP_MS});
  const tip = await box.locator('.chart-tip').evaluate((t) => ({step: t.dataset.step,
    rows: [...t.querySelectorAll('.tip-row')].map((r) => [r.dataset.series, r.querySelector('b').textContent])}));
  const guide = await box.locator('.c-hover').getAttribute('display');
  if (guide !== 'inline' || !(Number(tip.step) > 0) || tip.rows.map(([n]) => n).join() !== want.Loss.join() ||
      tip.rows.some(([, v]) => !/^\d/.test(v)))
    throw new Error('hover: guide ' + guide + ', tooltip ' + JSON.stringify(tip));
  mkdirSync(join(here, 'screenshots'), {recursive: true});
  await page.locator('tr.detail .charts').screenshot({path: join(here, 'screenshots', 'dashboard-chart-hover.png')});

  const before = await range();
  await chart.hover(at(0.2));
  await page.mouse.down();
  await chart.hover(at(0.35));
  await chart.hover(at(0.5));
  await page.mouse.up();
  await page.waitForFunction(() => [...document.querySelectorAll('tr.detail svg.chart')]
    .every((s) => s.dataset.zoomed === 'true'), null, {timeout: STEP_MS}).catch(async () => {
    throw new Error('no zoom after a drag: ' + JSON.stringify(await range()));
  });
  const zoomed = await range();
  const [[a0, a1], [b0, b1]] = [before[0], zoomed[0]];
  if (!(b0 > a0 && b1 < a1 && b1 - b0 < (a1 - a0) * 0.45) || zoomed[1][0] !== b0 || zoomed[1][1] !== b1)
    throw new Error('zoom: from ' + JSON.stringify(before) + ' to ' + JSON.stringify(zoomed));
  if (await box.locator('.chart-reset').isHidden()) throw new Error('no reset button while zoomed');
  await chart.hover(at(0.3));
  await page.locator('tr.detail .charts').screenshot({path: join(here, 'screenshots', 'dashboard-chart-zoomed.png')});
  await chart.dblclick(at(0.3));
  await page.waitForFunction(() => [...document.querySelectorAll('tr.detail svg.chart')]
    .every((s) => s.dataset.zoomed === 'false'), null, {timeout: STEP_MS});
  const after = await range();
  if (JSON.stringify(after) !== JSON.stringify(before))
    throw new Error('reset: ' + JSON.stringify(after) + ', before the zoom ' + JSON.stringify(before));
  if (await box.locator('.chart-reset').isVisible()) throw new Error('the reset button stays after a reset');

  // Smoothing draws a moving average over each curve, the points faint behind it; the log scale
  // puts the y axis in decades; both go back as they were.
  const look = () => chart.evaluate((s) => ({smooth: s.dataset.smooth, log: s.dataset.log,
    curve: s.querySelector('path[data-series="loss"]')?.getAttribute('d'),
    raw: s.querySelector('path[data-raw="loss"]')?.getAttribute('d') || null,
    y: [...s.querySelectorAll('text.c-ytick')].map((t) => t.textContent)}));
  const plain = await look();
  await box.locator('.chart-smooth').selectOption('0.9');
  await page.waitForFunction(() => document.querySelector('tr.detail svg.chart').dataset.smooth === '0.9', null,
    {timeout: STEP_MS});
  const smooth = await look();
  if (smooth.raw !== plain.curve || smooth.curve === plain.curve)
    throw new Error('smoothing: ' + JSON.stringify({plain, smooth}));
  await box.locator('.chart-log').click();
  await page.waitForFunction(() => document.querySelector('tr.detail svg.chart').dataset.log === 'true', null,
    {timeout: STEP_MS});
  const logged = await look();
  const decades = logged.y.map(Number);
  if (decades.length < 2 || decades.some((v) => !(v > 0) || Math.abs(Math.log10(v) - Math.round(Math.log10(v))) > 1e-9))
    throw new Error('log scale: y labels ' + JSON.stringify(logged.y));
  await page.locator('tr.detail .charts').screenshot({path: join(here, 'screenshots', 'dashboard-chart-smooth-log.png')});
  await box.locator('.chart-log').click();
  await box.locator('.chart-smooth').selectOption('0');
  await page.waitForFunction(() => {
    const s = document.querySelector('tr.detail svg.chart');
    return s.dataset.smooth === '0' && s.dataset.log === 'false';
  }, null, {timeout: STEP_MS});
  const back = await look();
  if (back.curve !== plain.curve || back.raw !== null) throw new Error('smoothing and log scale did not go back');
  await page.mouse.move(0, 0);
  return `charts ${charts.map((c) => c.title + ' (' + c.legend.map(([, t]) => t).join(', ') + ')').join(' and ')} ` +
    `by step; hover at step ${tip.step}: ${tip.rows.map((r) => r.join(' ')).join(', ')}; ` +
    `zoomed steps ${a0}-${a1} to ${b0.toFixed(1)}-${b1.toFixed(1)} on both charts, double-click restored them; ` +
    `smoothed 0.9 and on a log scale (y ${logged.y.join(' / ')}), then back`;
}

// Compare runs: a second XOR (another seed) submitted through the API, then named in the open
// XOR's "Compare with" box: its curves join each chart, labelled with its id beside the open
// job's; a job of another kind is refused by name; an empty box takes them away. Returns what it saw.
async function compareRuns(page) {
  const first = Number(await page.$eval('tr.detail', (tr) => tr.id.replace('detail-', '')));
  const second = await page.evaluate(async (id) => {
    const h = {Authorization: 'Bearer ' + localStorage.getItem('paragon.token'), 'Content-Type': 'application/json'};
    const job = await (await fetch('/api/v1/jobs/' + id, {headers: h})).json();
    const spec = {...job.spec, name: 'xor-seed-7', seed: 7};
    const made = await (await fetch('/api/v1/jobs', {method: 'POST', headers: h, body: JSON.stringify(spec)})).json();
    for (let i = 0; i < 300; i++) {
      const j = await (await fetch('/api/v1/jobs/' + made.id, {headers: h})).json();
      if (j.state === 'succeeded') return made.id;
      if (['failed', 'cancelled'].includes(j.state)) throw new Error('the second XOR ' + j.state);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the second XOR did not finish');
  }, first);
  await page.fill('#compare-ids', `${second} 999999`);
  await page.press('#compare-ids', 'Enter');
  await page.waitForFunction((id) => document.querySelector(`tr.detail path[data-series="#${id} loss"]`) &&
    /comparing with/.test(document.querySelector('#compare-msg').textContent), second, {timeout: STEP_MS});
  const seen = await page.$eval('tr.detail .chart-box', (b, id) => ({
    legend: [...b.querySelectorAll('.chart-key')].map((k) => k.textContent.replace(/ \S+$/, '')),
    theirs: b.querySelector(`path[data-series="#${id} loss"]`).dataset.points,
    // six keys: laid out in columns across the box, not one under the other
    grid: getComputedStyle(b.querySelector('.chart-legend')).display === 'grid',
    msg: document.querySelector('#compare-msg').textContent}), second);
  if (!seen.legend.includes(`#${first} training (epoch)`) || !seen.legend.includes(`#${second} test`) ||
      !(Number(seen.theirs) > 0) || !/#999999/.test(seen.msg) || !seen.grid)
    throw new Error('compare: ' + JSON.stringify(seen));
  await page.locator('tr.detail .main-col').screenshot({path: join(here, 'screenshots', 'dashboard-compare.png')});
  await page.fill('#compare-ids', '');
  await page.press('#compare-ids', 'Enter');
  await page.waitForFunction((id) => !document.querySelector(`tr.detail path[data-series="#${id} loss"]`) &&
    !document.querySelector('tr.detail .chart-key')?.textContent.startsWith('#') &&
    !document.querySelector('tr.detail .chart-legend.many'), second, {timeout: STEP_MS});
  return `compared with XOR #${second}: ${seen.legend.join(', ')} (${seen.msg}), then alone again`;
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

// The inet template in pgl: choosing the language swaps in pgl's fib, a compile error comes back
// beside the program naming its line and column, and fib runs to 17711. Returns what it saw.
async function pglFromTheForm(page) {
  await page.selectOption('#template', 'inet');
  await page.selectOption('#language', 'pgl');
  const fib = await page.inputValue('#program');
  if (!/fib\(n\) = switch n/.test(fib)) throw new Error('choosing pgl left the program: ' + fib.slice(0, 80));
  if (!/"language": "pgl"/.test(await page.inputValue('#spec'))) throw new Error('the spec does not say pgl');
  await page.fill('#program', 'main = fib(');
  await page.click('#submit-job');
  await page.waitForFunction(() => {
    const e = document.querySelector('#program-error');
    return e && !e.hidden && /line 1, column 12/.test(e.textContent);
  }, null, {timeout: STEP_MS}).catch(async () => {
    throw new Error('no compile error beside the program: ' + await page.textContent('#submit-msg'));
  });
  const said = (await page.textContent('#program-error')).trim();
  // the job's name follows a program pasted in, while nobody typed one
  await page.fill('#program', 'sq(x) = x * x\nmain = sq(7)');
  if (!/"name": "sq"/.test(await page.inputValue('#spec'))) throw new Error('the name did not follow the program: ' +
    await page.inputValue('#spec'));
  await page.fill('#program', fib);
  if (!/"name": "fib"/.test(await page.inputValue('#spec'))) throw new Error('the name did not follow back to fib');
  await page.click('#submit-job');
  await page.waitForFunction(() => /succeeded/.test(document.querySelector('#job-state')?.textContent || '') &&
    /17711/.test(document.querySelector('tr.detail')?.textContent || ''), null, {timeout: STEP_MS});
  // the template that trains XOR by interaction nets: (its last loss, samples right)
  await page.selectOption('#template', 'xor-inet');
  if (!/train\(100, init/.test(await page.inputValue('#program'))) throw new Error('no XOR program in the form');
  await page.click('#submit-job');
  await page.waitForFunction(() => /succeeded/.test(document.querySelector('#job-state')?.textContent || '') &&
    /\(0\.006620407, 4\)/.test(document.querySelector('tr.detail')?.textContent || ''), null, {timeout: STEP_MS});
  // an inet job's chart: its rate by the interactions done
  await page.waitForFunction(() => [...document.querySelectorAll('tr.detail .chart-box')].some((b) =>
    b.querySelector('.chart-title')?.textContent === 'MIPS' && b.querySelector('.c-xname')?.textContent === 'interactions' &&
    Number(b.querySelector('path[data-series="mips"]')?.dataset.points) >= 1), null, {timeout: STEP_MS})
    .catch(async () => { throw new Error('no MIPS chart: ' + await page.textContent('tr.detail .charts')); });
  // its steps are interactions, numbers of six digits and more: no label under the x axis runs
  // into the axis's name or past the chart's edge (as rendered, by the text's own box)
  const crowded = await page.evaluate(() => [...document.querySelectorAll('tr.detail svg.chart')].flatMap((s) => {
    const name = s.querySelector('.c-xname').getBBox(), width = s.viewBox.baseVal.width;
    return [...s.querySelectorAll('.c-xtick')].filter((t) => {
      const b = t.getBBox();
      return b.x < name.x + name.width || b.x + b.width > width;
    }).map((t) => t.textContent + ' beside ' + s.querySelector('.c-xname').textContent);
  }));
  if (crowded.length) throw new Error('x labels over the axis name or the edge: ' + crowded.join('; '));
  return `pgl from the form: the error "${said}", then fib(22) = 17711, then XOR trained by nets: (0.006620407, 4), its MIPS charted`;
}

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

  // Stop: a long text stopped after a few characters keeps them and says so.
  await page.fill('#gen-max-tokens', '100000');
  await page.click('#generate');
  await page.waitForFunction(() => Number(document.querySelector('.generate .gen-text')?.dataset.tokens) >= 5,
    null, {timeout: STEP_MS});
  await page.click('#gen-stop');
  await page.waitForSelector('.generate .gen-text[data-state="cancelled"]', {timeout: STEP_MS});
  const stopped = await page.$eval('#gen-stats', (e) => e.textContent);
  // the count as the page formats it (15,673 when a loaded machine streamed many before the click)
  if (!/^Stopped after \d[\d,]* characters/.test(stopped)) throw new Error('after Stop: ' + stopped);
  if (!(await page.$eval('#gen-stop', (e) => e.hidden))) throw new Error('Stop still shown after stopping');

  // A generate job's own detail follows its text while it runs (token events), then cancels it.
  await page.click('#generate');
  await page.waitForFunction(() => Number(document.querySelector('.generate .gen-text')?.dataset.tokens) >= 1,
    null, {timeout: STEP_MS});
  const genRow = page.locator('#jobs-body tr.job', {hasText: 'running'}).filter({hasText: 'generate'});
  await genRow.locator('button.expander').click({timeout: STEP_MS});
  await page.waitForFunction(() => /characters so far/.test(document.querySelector('tr.detail .gen-stats')?.textContent || ''),
    null, {timeout: STEP_MS});
  const live1 = await page.$eval('tr.detail .gen-text', (e) => e.textContent.length);
  await page.waitForFunction((n) => (document.querySelector('tr.detail .gen-text')?.textContent.length || 0) > n + 5,
    live1, {timeout: STEP_MS});
  // Cancel asks first: dismissed, nothing happens; accepted, the job is cancelled and Resume shows
  let asked = '';
  page.once('dialog', (dialog) => { asked = dialog.message(); dialog.dismiss(); });
  await page.click('#cancel-job');
  if (!/^Cancel job #\d+\?/.test(asked)) throw new Error('Cancel did not ask to confirm: ' + JSON.stringify(asked));
  if (/cancelled/.test(await page.$eval('#job-state', (e) => e.textContent))) throw new Error('a dismissed Cancel cancelled');
  page.once('dialog', (dialog) => dialog.accept());
  await page.click('#cancel-job');
  await page.waitForFunction(() => /cancelled/.test(document.querySelector('#job-state')?.textContent || ''),
    null, {timeout: STEP_MS});
  await page.waitForSelector('#resume-job:not([hidden])', {timeout: STEP_MS});
  return `GPT refused beside #steps, trained from the form with both curves drawn, "${text}" ` +
    `streamed a character at a time (in ${batches} batches: ${stats}); Stop kept "${stopped}"; a generate ` +
    `job's detail followed its text live from ${live1} characters, then was cancelled`;
}

// The Datasets panel: a text uploaded from the page is listed with what it holds (beside the
// tiny.txt the GPT step copied in by hand), a file that is not what its name says is refused
// with the server's reason, and Delete removes a file.
async function datasetsPanel(page) {
  await page.setInputFiles('#ds-file', {name: 'poem.txt', mimeType: 'text/plain',
    buffer: Buffer.from('the lazy dog sleeps. the quick fox jumps.\n')});
  await page.click('#ds-upload');
  await page.waitForSelector('#ds-body tr[data-name="poem.txt"]', {timeout: STEP_MS});
  const said = await page.$eval('#ds-msg', (e) => e.textContent);
  if (!/^Uploaded poem\.txt: text, 42 characters/.test(said)) throw new Error('after the upload: ' + said);
  const names = await page.$$eval('#ds-body tr', (trs) => trs.map((tr) => tr.dataset.name));
  if (!names.includes('tiny.txt')) throw new Error('the hand-copied tiny.txt is not listed: ' + names);
  await page.locator('section[aria-labelledby="ds-h"]').screenshot({path: join(here, 'screenshots', 'dashboard-datasets.png')});

  await page.setInputFiles('#ds-file', {name: 'bad.idx', mimeType: 'application/octet-stream',
    buffer: Buffer.from('not an idx file at all')});
  await page.click('#ds-upload');
  await page.waitForFunction(() => {
    const m = document.querySelector('#ds-msg');
    return m.classList.contains('err') && /Not uploaded: .*not an idx file/.test(m.textContent);
  }, null, {timeout: STEP_MS});
  if (await page.$('#ds-body tr[data-name="bad.idx"]')) throw new Error('a refused upload is listed');

  await page.click('#ds-body tr[data-name="poem.txt"] button');
  await page.waitForFunction(() => !document.querySelector('#ds-body tr[data-name="poem.txt"]'), null,
    {timeout: STEP_MS});
  return `datasets: poem.txt uploaded and listed beside tiny.txt, bad.idx refused ("${
    await page.$eval('#ds-msg', (e) => e.textContent)}" after the delete)`;
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

// A job's address on a fresh page: every row links to its job; with more jobs than a page lists,
// #/jobs/ID of the first one (on page 2) opens its detail anyway, above the list, and a change of
// address opens another. The fresh page's Devices panel shows the utilisation paragond kept: the
// device that trained XOR was busy in some interval, though this page never saw it run.
const PAGE = 50;
async function addressesAndHistory(page, server, token, context) {
  const links = await page.$$eval('#jobs-body tr.job', (trs) => trs.map((tr) =>
    [tr.dataset.id, tr.querySelector('a.permalink')?.getAttribute('href')]));
  if (!links.length || links.some(([id, href]) => href !== '#/jobs/' + id))
    throw new Error('row links: ' + JSON.stringify(links));
  const ids = links.map(([id]) => Number(id));
  const first = Math.min(...ids);
  const api = (path, init = {}) => fetch(`http://127.0.0.1:${server.port}/api/v1${path}`,
    {...init, headers: {Authorization: 'Bearer ' + token, 'Content-Type': 'application/json'}});
  const xor = await (await api('/jobs/' + first)).json();
  let last = 0;
  for (let i = 0; i < PAGE; i++) {             // tiny inet jobs on the host push it off page 1
    const r = await api('/jobs', {method: 'POST', body: JSON.stringify({kind: 'inet', name: 'one-' + i,
      device: 'host', program: '@main = 1'})});
    if (r.status !== 201) throw new Error('inet job refused: ' + r.status + ' ' + await r.text());
    last = (await r.json()).id;
  }

  const fresh = await context.newPage();
  const errors = [];
  fresh.on('pageerror', (e) => errors.push(String(e)));
  await fresh.goto(`http://127.0.0.1:${server.port}/#/jobs/${first}`);
  // The utilisation from paragond's history, before anything else can have sampled it.
  await fresh.waitForFunction((dev) => {
    const card = document.querySelector(`#devices .device[data-id="${dev}"]`);
    const u = card?.querySelector('svg.util');
    return u && Number(u.dataset.intervals) > 0 && [...u.querySelectorAll('.util-bar')].some((b) =>
      Number(b.getAttribute('height')) > 0);
  }, xor.device, {timeout: STEP_MS}).catch(async () => {
    throw new Error('no utilisation history for ' + xor.device + ': ' + JSON.stringify(await fresh.$$eval(
      '#devices .device', (cs) => cs.map((c) => [c.dataset.id, c.querySelector('svg.util')?.getAttribute('aria-label')]))));
  });
  const util = await fresh.$$eval('#devices .device', (cs) => cs.map((c) =>
    c.dataset.id + ': ' + c.querySelector('svg.util').getAttribute('aria-label')));
  if (util.some((u) => !/utilisation \d[\d.]*% over the last \d+ (s|min)$/.test(u)))
    throw new Error('utilisation: ' + JSON.stringify(util));
  // Each card says its kernel family and GEMM tile (the device profile), the host its reference.
  const kernels = await fresh.$$eval('#devices .device', (cs) => cs.map((c) => {
    const dt = [...c.querySelectorAll('dt')].find((d) => d.textContent === 'Kernels');
    return [c.dataset.id, dt ? dt.nextElementSibling.textContent : null];
  }));
  if (kernels.some(([id, k]) => id === 'host' ? k !== 'host reference (C)' : !/^cpu family, GEMM \d+x\d+/.test(k || '')))
    throw new Error('kernels: ' + JSON.stringify(kernels));
  // The node this paragond is on the store, heard from.
  const node = await fresh.$eval('#nodes', (p) => p.textContent);
  if (!/^Node: \S+ 127\.0\.0\.1:\d+ \(heard /.test(node)) throw new Error('nodes: ' + node);
  mkdirSync(join(here, 'screenshots'), {recursive: true});
  await fresh.locator('#devices').screenshot({path: join(here, 'screenshots', 'dashboard-devices.png')});

  await fresh.waitForFunction((id) => document.querySelector(`#pinned-body #detail-${id}`) &&
    /succeeded/.test(document.querySelector('#job-state')?.textContent || '') &&
    Number(document.querySelector('.chart path[data-series="test_loss"]')?.dataset.points) > 0,
  first, {timeout: STEP_MS}).catch(async () => {
    throw new Error('#/jobs/' + first + ' on a fresh page: ' + await fresh.evaluate(() =>
      document.querySelector('#pinned-body')?.textContent.slice(0, 300)));
  });
  if (await fresh.$(`#jobs-body tr.job[data-id="${first}"]`)) throw new Error(`job ${first} is on page 1 after ${PAGE} more`);
  const listed = await fresh.$$eval('#jobs-body tr.job', (trs) => trs.length);
  await fresh.locator('#pinned-body').screenshot({path: join(here, 'screenshots', 'dashboard-permalink.png')});

  await fresh.evaluate((id) => { location.hash = '#/jobs/' + id; }, last);
  await fresh.waitForFunction((id) => document.querySelector(`#jobs-body #detail-${id}`) &&
    document.querySelector('#pinned-body').hidden && location.hash === '#/jobs/' + id, last, {timeout: STEP_MS});
  // A row's link, clicked: its job opens (the row's own toggle does not close it again).
  await fresh.click(`#jobs-body tr.job[data-id="${last - 1}"] a.permalink`);
  await fresh.waitForFunction((id) => document.querySelector(`#jobs-body #detail-${id}`) &&
    location.hash === '#/jobs/' + id, last - 1, {timeout: STEP_MS});
  // Back: the address before, and its job's detail.
  await fresh.goBack();
  await fresh.waitForFunction((id) => document.querySelector(`#jobs-body #detail-${id}`) &&
    location.hash === '#/jobs/' + id, last, {timeout: STEP_MS});
  // A job that does not exist: said where its detail would be.
  await fresh.evaluate(() => { location.hash = '#/jobs/999999'; });
  await fresh.waitForFunction(() => /Job #999999 cannot be shown: .*999999/.test(
    document.querySelector('#pinned-body #detail-999999')?.textContent || ''), null, {timeout: STEP_MS})
    .catch(async () => {
      throw new Error('#/jobs/999999: ' + await fresh.$eval('#pinned-body', (b) => b.textContent.slice(0, 300)));
    });
  await fresh.keyboard.press('Escape');
  await fresh.waitForFunction(() => !document.querySelector('tr.detail') && location.hash === '', null, {timeout: STEP_MS});
  await fresh.close();
  if (errors.length) throw new Error('page errors on the fresh page: ' + errors.join('; '));
  return `every row links to its job; #/jobs/${first} opened on a fresh page (not among its ${listed} ` +
    `listed jobs), #/jobs/${last} after it, #/jobs/${last - 1} from its row's link and #/jobs/${last} ` +
    `again on going back, a missing job ` +
    `said so; the fresh page's utilisation: ${util.join('; ')}`;
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
  const charts = await chartInteractions(page);
  const compared = await compareRuns(page);
  const pgl = await pglFromTheForm(page);
  const gpt = await gptFromTheForm(page, server);
  const datasets = await datasetsPanel(page);
  const ranks = await distributedFromTheForm(page);
  const addresses = await addressesAndHistory(page, server, token, context);
  return `token from the #token= link, XOR submitted from the form, ${points} chart points, state succeeded; ` +
    `${charts}; ${compared}; ${pgl}; ${gpt}; ${datasets}; ${ranks}; ${addresses}`;
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
