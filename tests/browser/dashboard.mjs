// dashboard.mjs: the dashboard in a real browser. Starts paragond on a free port with a fresh
// database, opens the page in headless Chromium (Debian's, driven by playwright-core; nothing is
// downloaded), submits the XOR template through the form, and waits until the job is listed,
// its chart has points from the live event stream, and its state reads succeeded. Saves a
// screenshot to tests/browser/screenshots/dashboard.png. Run by `meson test` (browser_dashboard);
// needs `npm ci` in tests/browser (scripts/install-deps.sh --test does it).
import {spawn} from 'node:child_process';
import {mkdtempSync, mkdirSync, readFileSync, rmSync} from 'node:fs';
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

// paragond on a free port; resolves with its port once it prints its listening line.
function startServer(dir) {
  const proc = spawn(paragond, ['--port', '0', '--db', join(dir, 'p.db'), '--data-dir', join(dir, 'data'),
    '--no-calibration'], {stdio: ['ignore', 'pipe', 'inherit']});
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('paragond did not start')), STEP_MS);
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({proc, port: Number(m[1])});
      }
    });
    proc.on('exit', (code) => reject(new Error('paragond exited with ' + code)));
  });
}

const dir = mkdtempSync(join(tmpdir(), 'paragon-browser-'));
let server, browser, failure = null;
try {
  server = await startServer(dir);
  const token = readFileSync(join(dir, 'data', 'token'), 'utf8').trim();
  browser = await chromium.launch({executablePath: chromiumPath, args: ['--no-sandbox']});
  const page = await browser.newPage({viewport: {width: 1280, height: 1400}});
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // the token, as a person pastes it into the token box (kept in local storage)
  await page.addInitScript((t) => localStorage.setItem('paragon.token', t), token);
  await page.goto(`http://127.0.0.1:${server.port}/`);

  // the XOR template, submitted through the form
  await page.waitForSelector('#template', {timeout: STEP_MS});
  const xor = await page.$eval('#template', (sel) =>
    [...sel.options].find((o) => /xor/i.test(o.textContent + ' ' + o.value))?.value);
  if (!xor) throw new Error('no XOR template in #template');
  await page.selectOption('#template', xor);
  await page.click('#submit-job');

  // the job is listed, its chart gets points and its state reaches succeeded
  await page.waitForSelector('#jobs-body tr', {timeout: STEP_MS});
  await page.waitForFunction(() => {
    const c = document.querySelector('.chart[data-points]');
    return c && Number(c.getAttribute('data-points')) > 0;
  }, null, {timeout: STEP_MS});
  await page.waitForFunction(() => /succeeded/.test(document.querySelector('#job-state')?.textContent || ''),
    null, {timeout: STEP_MS});
  const points = await page.$eval('.chart[data-points]', (c) => Number(c.getAttribute('data-points')));

  mkdirSync(join(here, 'screenshots'), {recursive: true});
  await page.screenshot({path: join(here, 'screenshots', 'dashboard.png'), fullPage: true});
  if (errors.length) throw new Error('page errors: ' + errors.join('; '));
  console.log(`browser test: XOR submitted from the form, ${points} chart points, state succeeded; ` +
    'screenshot in tests/browser/screenshots/dashboard.png');
} catch (e) {
  failure = e.stack || String(e);
} finally {
  if (browser) await browser.close();
  if (server) server.proc.kill('SIGTERM');
  rmSync(dir, {recursive: true, force: true});
}
if (failure) fail(failure);
console.log('[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0');
