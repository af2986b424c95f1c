// app.js: the dashboard's entry module: the refresh loop (every 1 s while jobs are queued or
// running, every 5 s otherwise, never while the tab is hidden) that feeds each panel, the banner
// that says when the server cannot be reached, the version line, the job an address names
// (#/jobs/ID, once the first page is drawn and whenever it changes), and the page's wiring.
// Each panel is a module of its own; their imports say who uses what.

import {API, HttpError, TERMINAL, getJSON} from './api.js';
import {benchAfterJobs, setBenchSuite} from './bench.js';
import {initDatasets} from './datasets.js';
import {closeDetail, openFromHash, refreshDetail} from './detail.js';
import {renderDevices, renderNodes} from './devices.js';
import {$, setText} from './dom.js';
import {initForm, offerTemplates} from './form.js';
import {initJobs, pageWanted, showPage} from './jobs.js';
import {setRefresh} from './refresh.js';
import {askToken, initToken, openSession, readsAnswered} from './session.js';

const FAST_MS = 1000;       // poll period while any job is queued or running
const SLOW_MS = 5000;       // poll period when everything is idle
const RETRY_MS = 2000;      // poll period while the server cannot be reached

const loop = {timer: 0, inflight: false, again: false};
let downSince = 0;          // when the server stopped answering; 0 while it answers
let versionShown = false;
let routed = false;         // the address's job (#/jobs/ID) was opened, once the first page was drawn

function schedule(ms) {
  clearTimeout(loop.timer);
  loop.timer = document.hidden ? 0 : setTimeout(refresh, ms);
}

async function refresh() {
  clearTimeout(loop.timer);
  loop.timer = 0;
  if (loop.inflight) { loop.again = true; return; }
  loop.inflight = true;
  let delay = RETRY_MS;
  try {
    const want = pageWanted();
    const [jobs, devs, nodes] = await Promise.all([getJSON(want.url), getJSON(API + '/devices'),
      getJSON(API + '/nodes')]);
    const devices = Array.isArray(devs.devices) ? devs.devices : [];
    renderNodes(Array.isArray(nodes.nodes) ? nodes.nodes : []);
    const list = Array.isArray(jobs.jobs) ? jobs.jobs : [];
    const total = typeof jobs.total === 'number' ? jobs.total : list.length;
    renderDevices(devices);
    offerTemplates(devices);
    if (!showPage(want, list, total)) {
      loop.again = true;            // paged or filtered meanwhile, or the page vanished
    } else {
      if (!routed) { routed = true; openFromHash(); }
      await refreshDetail();
      benchAfterJobs(list);         // not awaited: its own pace, its own errors
    }
    const busy = list.some((j) => !TERMINAL.has(j.state)) ||
      devices.some((d) => d.queued > 0 || d.running_job != null);
    delay = busy ? FAST_MS : SLOW_MS;
    setDown(null);
    setText($('updated'), 'updated ' + new Date().toLocaleTimeString() +
      (busy ? ' \u00b7 live' : ''));
    if (!versionShown) loadVersion();
  } catch (e) {
    setDown(e);
  } finally {
    loop.inflight = false;
  }
  if (loop.again) { loop.again = false; delay = 0; }
  schedule(delay);
}

function setDown(e) {
  const b = $('banner');
  document.body.classList.toggle('stale', !!e);
  if (!e) {
    b.hidden = true;
    downSince = 0;
    readsAnswered();
    return;
  }
  if (e instanceof HttpError && e.status === 401) { askToken(e.message); return; }
  if (!downSince) {
    downSince = Date.now();
    const u = $('updated');
    setText(u, u.textContent.replace(/^updated/, 'last update').replace(/ \u00b7 live$/, ''));
  }
  const since = new Date(downSince).toLocaleTimeString();
  const what = e instanceof HttpError
    ? 'The paragond server answers with an error (' + e.message + ')'
    : 'Cannot reach the paragond server at ' + location.origin;
  setText(b, what + ' since ' + since + '. Retrying every ' + RETRY_MS / 1000 +
    ' s; the figures below may be out of date.');
  b.hidden = false;
}

async function loadVersion() {
  try {
    const v = await getJSON(API + '/version');
    setText($('version'), v.version ? 'v' + v.version : '');
    const cl = (Array.isArray(v.opencl) ? v.opencl : [])
      .map((p) => [p.name, p.version].filter(Boolean).join(' \u2013 '));
    setText($('opencl'), cl.length ? cl.join('; ') : 'no OpenCL platform');
    versionShown = true;
  } catch (_) { /* the banner already tells; tried again on the next good refresh */ }
}

function init() {
  setRefresh(refresh);
  initJobs();
  initForm();
  initToken();
  initDatasets();
  $('b-suite').addEventListener('change', (e) => setBenchSuite(e.target.value));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') closeDetail(); });
  window.addEventListener('hashchange', () => { if (routed) openFromHash(true); });
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) { clearTimeout(loop.timer); loop.timer = 0; } else refresh();
  });
  setBenchSuite($('b-suite').value);   // the browser may restore the last suite chosen
  // A stored token (or one from #token=) gets its session first: a cookie from an earlier
  // visit may be gone with the browser's session, or void after a token change.
  openSession().finally(refresh);
}

init();
