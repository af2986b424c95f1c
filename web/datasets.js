// datasets.js: the Datasets panel: the files train jobs can name (GET /datasets), an upload
// (PUT /datasets/{name}, with the file's SHA-256 in Content-SHA256 where the browser can compute
// it) and a Delete per file. Listed when the page loads and after each change: datasets change
// only through this panel, the API or by hand, not as jobs run.

import {API, api, errText, getJSON} from './api.js';
import {$, el, setText} from './dom.js';
import {fmtBytes, fmtTime} from './format.js';
import {flagToken} from './session.js';

const UPLOAD_MS = 10 * 60 * 1000;   // a file of hundreds of megabytes over a slow link

// What a listed file holds, in a few words: an idx file's kind and dims, a text's characters.
function holds(d) {
  if (d.valid === false) return 'unreadable: ' + (d.problem || 'see the API');
  if (d.kind && Array.isArray(d.dims)) return d.kind + ' ' + d.dims.join('\u00d7');
  if (typeof d.chars === 'number') return d.chars.toLocaleString() + ' characters';
  return '';
}

function say(text, isError) {
  const m = $('ds-msg');
  setText(m, text);
  m.classList.toggle('err', !!isError);
  m.classList.toggle('ok', !isError);
  m.hidden = !text;
}

export async function loadDatasets() {
  const body = $('ds-body');
  let v;
  try {
    v = await getJSON(API + '/datasets');
  } catch (e) {
    if (e.status === 401) flagToken();
    say('Datasets unavailable: ' + e.message, true);
    return;
  }
  const list = Array.isArray(v.datasets) ? v.datasets : [];
  if (typeof v.max_bytes === 'number') setText($('ds-limit'), 'up to ' + fmtBytes(v.max_bytes) + ' a file');
  const rows = list.map((d) => {
    const tr = el('tr');
    tr.dataset.name = d.name;
    const del = el('button', 'cancel', 'Delete');
    del.type = 'button';
    del.setAttribute('aria-label', 'Delete ' + d.name);
    del.addEventListener('click', () => remove(d.name, del));
    const sha = el('td', 'mono small', (d.sha256 || '').slice(0, 12));
    sha.title = d.sha256 || '';
    const act = el('td');
    act.append(del);
    tr.append(el('td', 'mono', d.name), el('td', null, d.format || ''), el('td', null, holds(d)),
      el('td', 'num', fmtBytes(d.bytes)), sha, el('td', 'small', d.modified_at ? fmtTime(d.modified_at) : ''), act);
    return tr;
  });
  if (!rows.length) {
    const tr = el('tr');
    const td = el('td', 'muted', 'No datasets yet: upload idx (.idx, -ubyte, .gz) or text (.txt) files here, ' +
      'with `paragon upload FILE`, or PUT /api/v1/datasets/{name}.');
    td.colSpan = 7;
    tr.append(td);
    rows.push(tr);
  }
  body.replaceChildren(...rows);
}

// The file's SHA-256 in hex, or null where the browser has no SubtleCrypto (a page served over
// plain HTTP off loopback): the server then checks nothing against it, and says its own digest.
async function sha256(file) {
  if (!globalThis.crypto || !crypto.subtle) return null;
  const digest = await crypto.subtle.digest('SHA-256', await file.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function upload(ev) {
  ev.preventDefault();
  const file = $('ds-file').files[0];
  const name = $('ds-name').value.trim() || (file && file.name) || '';
  if (!file) { say('Choose a file to upload.', true); return; }
  const go = $('ds-upload');
  go.disabled = true;
  say('Uploading ' + name + ' (' + fmtBytes(file.size) + ')\u2026');
  try {
    const headers = {'Content-Type': 'application/octet-stream'};
    const digest = await sha256(file);
    if (digest) headers['Content-SHA256'] = digest;
    const r = await api(API + '/datasets/' + encodeURIComponent(name), {method: 'PUT', body: file, headers,
      timeoutMs: UPLOAD_MS});
    if (r.status === 401) flagToken();
    if (!r.ok) { say('Not uploaded: ' + errText(r), true); return; }
    const d = r.body || {};
    say((r.status === 201 ? 'Uploaded ' : 'Replaced ') + d.name + ': ' + [d.format, holds(d), fmtBytes(d.bytes)]
      .filter(Boolean).join(', ') + '.');
    $('ds-form').reset();
    await loadDatasets();
  } catch (e) {
    say('Not uploaded: ' + (e.name === 'AbortError' ? 'timed out' : 'server unreachable'), true);
  } finally {
    go.disabled = false;
  }
}

async function remove(name, button) {
  button.disabled = true;
  try {
    const r = await api(API + '/datasets/' + encodeURIComponent(name), {method: 'DELETE'});
    if (r.status === 401) flagToken();
    if (!r.ok) { say('Not deleted: ' + errText(r), true); return; }
    say('Deleted ' + name + '.');
    await loadDatasets();
  } catch (_) {
    say('Not deleted: server unreachable.', true);
  } finally {
    button.disabled = false;
  }
}

export function initDatasets() {
  $('ds-form').addEventListener('submit', upload);
  loadDatasets();
}
