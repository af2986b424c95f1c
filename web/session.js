// session.js: the "API token" box and what hangs on it: a #token= link stored and taken out of
// the address, the banner and flag that ask for a token when reads are refused, and the session
// cookie the token is traded for, so that the event streams and the checkpoint link can read.

import {API, api, saveToken, token} from './api.js';
import {$, setText} from './dom.js';
import {refresh} from './refresh.js';

let asked = false;          // the token box was flagged (and focused) for a refused read

const label = () => $('token').closest('label');

// Reads answered 401: paragond listens beyond loopback and this browser has no token, or a
// wrong one. The banner says which; the token box is flagged (and focused the first time).
export function askToken(why) {
  const b = $('banner');
  setText(b, (token()
    ? 'paragond refused the API token saved in this browser'
    : 'paragond listens beyond loopback, so showing its data needs the API token') +
    ': paste the contents of its token file (paragond prints where it is; by default data/token) ' +
    'into "API token" at the top. (' + why + ')');
  b.hidden = false;
  label().classList.add('attention');
  if (!asked) $('token').focus();
  asked = true;
}

// Reads went through again: the flag askToken raised comes down.
export function readsAnswered() {
  if (asked) label().classList.remove('attention');
  asked = false;
}

// A write needed the token: the box is flagged and focused.
export function flagToken() {
  label().classList.add('attention');
  $('token').focus();
}

// A write went through: the token is good.
export function unflagToken() { label().classList.remove('attention'); }

// Trades the token for the session cookie, so that the event streams and the checkpoint link
// work where reads need the token. A refused token flags the box at once (where reads need the
// token, the next refresh says why; on loopback, writing would).
export async function openSession() {
  if (!token()) return;
  try {
    const r = await api(API + '/session', {method: 'POST'});
    if (r.status === 401) label().classList.add('attention');
  } catch (_) { /* unreachable: the refresh loop's banner says so */ }
}

// The token was removed from this browser: the cookie goes too (DELETE needs the old token).
async function closeSession(old) {
  if (!old) return;
  try { await api(API + '/session', {method: 'DELETE', token: old}); } catch (_) { /* best effort */ }
}

// "#token=..." in the address: stored as the API token, then taken out of the address (and
// of the history) so that it is not bookmarked or shared by accident.
function tokenFromFragment() {
  const m = /^#token=([^&]*)/.exec(location.hash);
  if (!m) return;
  try { saveToken(decodeURIComponent(m[1])); } catch (_) { /* a malformed escape: nothing kept */ }
  history.replaceState(null, '', location.pathname + location.search);
}

export function initToken() {
  tokenFromFragment();
  window.addEventListener('hashchange', async () => {
    if (!/^#token=/.test(location.hash)) return;
    tokenFromFragment();
    $('token').value = token();
    await openSession();
    refresh();
  });
  const tok = $('token');
  tok.value = token();
  tok.addEventListener('change', async () => {
    const old = token();
    saveToken(tok.value);
    label().classList.remove('attention');
    asked = false;
    if (token()) await openSession(); else await closeSession(old);
    refresh();
  });
}
