// api.js: the dashboard's HTTP client for paragond's JSON API: the base path, the request
// timeout, the bearer token kept in this browser's local storage, and the one-line text of an
// API error. No DOM here: the panels decide what a failure looks like.

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

// opts.token: send this token instead of the stored one.
export async function api(path, opts = {}) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  const tok = opts.token !== undefined ? opts.token : token();
  const auth = tok ? {Authorization: 'Bearer ' + tok} : {};
  try {
    const res = await fetch(path, {
      ...opts, signal: ctl.signal, cache: 'no-store',
      headers: {Accept: 'application/json', ...auth, ...(opts.headers || {})},
    });
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
    return {status: res.status, ok: res.ok, body, headers: res.headers, text};
  } finally {
    clearTimeout(t);
  }
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
