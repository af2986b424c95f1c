// api.js: the dashboard's HTTP client for paragond's JSON API: the base path, the request
// timeout, the bearer token kept in this browser's local storage, a POST read as an event stream
// (generation), and the one-line text of an API error. No DOM here: the panels decide what a
// failure looks like.

export const API = '/api/v1';
const TIMEOUT_MS = 8000;    // a request slower than this counts as "cannot reach"
export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);   // a job's final states

export class HttpError extends Error {
  constructor(r) { super(errText(r)); this.status = r.status; }
}

// The API token (POST and DELETE need it; reads too when paragond listens beyond loopback),
// kept in this browser's local storage. The event streams and the checkpoint link cannot send
// it, so the token is also traded for a session cookie (POST /api/v1/session, session.js) that
// the server accepts for reads only.
const TOKEN_KEY = 'paragon.token';
export function token() { try { return localStorage.getItem(TOKEN_KEY) || ''; } catch (_) { return ''; } }
export function saveToken(t) {
  try { localStorage.setItem(TOKEN_KEY, t.trim()); } catch (_) { /* private mode: this page only */ }
}

// opts.token: send this token instead of the stored one; opts.timeoutMs: a longer wait than
// TIMEOUT_MS (an upload).
export async function api(path, opts = {}) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), opts.timeoutMs || TIMEOUT_MS);
  try {
    return await answer(await fetch(path, request(opts, ctl.signal, 'application/json')));
  } finally {
    clearTimeout(t);
  }
}

function request(opts, signal, accept) {
  const tok = opts.token !== undefined ? opts.token : token();
  const auth = tok ? {Authorization: 'Bearer ' + tok} : {};
  return {...opts, signal, cache: 'no-store', headers: {Accept: accept, ...auth, ...(opts.headers || {})}};
}

// A whole answer: its status, its text and, when the text is JSON, the value.
async function answer(res) {
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
  return {status: res.status, ok: res.ok, body, headers: res.headers, text};
}

// A JSON POST answered with Server-Sent Events, read as they arrive (EventSource cannot POST):
// onEvent(type, data) per event, data parsed from JSON. Only the wait for the answer to begin
// is timed: a stream lasts as long as its job. Resolves once the stream ends, with the status
// and no body; an answer that is not a stream (a refusal) resolves as api() would give it.
// signal: aborts the request, whichever part of it is under way.
export async function postEvents(path, value, onEvent, signal) {
  const ctl = new AbortController();
  const stop = () => ctl.abort();
  if (signal) signal.addEventListener('abort', stop);
  const t = setTimeout(stop, TIMEOUT_MS);
  try {
    const res = await fetch(path, request({method: 'POST', body: JSON.stringify(value),
      headers: {'Content-Type': 'application/json'}}, ctl.signal, 'text/event-stream'));
    clearTimeout(t);
    if (!/^text\/event-stream/.test(res.headers.get('Content-Type') || '')) return await answer(res);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const {value: chunk, done} = await reader.read();
      if (done) break;
      buf += chunk;
      for (let m; (m = /\r?\n\r?\n/.exec(buf));) {
        const ev = sseFrame(buf.slice(0, m.index));
        buf = buf.slice(m.index + m[0].length);
        if (ev) onEvent(ev.type, ev.data);
      }
    }
    return {status: res.status, ok: res.ok, body: null, headers: res.headers, text: ''};
  } finally {
    clearTimeout(t);
    if (signal) signal.removeEventListener('abort', stop);
  }
}

// One frame of an event stream ("event: T", "data: D" lines; ":" starts a comment; "id" and
// "retry" matter only to EventSource's reconnection, which a POST does not do), or null for a
// frame without data.
function sseFrame(text) {
  let type = 'message';
  const data = [];
  for (const line of text.split(/\r?\n/)) {
    if (!line || line[0] === ':') continue;
    const i = line.indexOf(':');
    const key = i < 0 ? line : line.slice(0, i);
    const v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (key === 'event') type = v;
    else if (key === 'data') data.push(v);
  }
  if (!data.length) return null;
  try { return {type, data: JSON.parse(data.join('\n'))}; } catch (_) { return null; }
}

export async function getJSON(path) {
  const r = await api(path);
  if (!r.ok || !r.body) throw new HttpError(r);
  return r.body;
}

// "invalid_spec: model.layers[1]: must be > 0" from the API's error object, else the status.
export function errText(r) {
  const e = r.body && r.body.error;
  if (e && e.message) return (e.code ? e.code + ': ' : '') + e.message;
  if (r.ok) return 'unreadable response (HTTP ' + r.status + ')';
  return 'HTTP ' + r.status + (r.text ? ' ' + r.text.slice(0, 200) : '');
}
