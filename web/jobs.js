// jobs.js: the Jobs panel: which page of the job list is shown (offset, state, kind and tag filters,
// PAGE jobs a page), the table drawn from it with the open detail under its job, and the pagers.
// Only what changed moves in the table, so that a focused row keeps its focus.

import {API} from './api.js';
import {closeDetail, jobLink, openDetail, shown, toggleDetail} from './detail.js';
import {$, setAttr, setText} from './dom.js';
import {makeRow, rows, updateRow} from './jobrow.js';
import {refresh} from './refresh.js';

const PAGE = 50;            // jobs per page; the table stays fast however many jobs exist
const view = {offset: 0, state: '', kind: '', tag: ''};   // the page being shown

// The page to fetch, as the user has asked for it now; showPage gets it back with the answer.
export function pageWanted() {
  const want = {...view};
  const q = new URLSearchParams({limit: String(PAGE), offset: String(want.offset)});
  if (want.state) q.set('state', want.state);
  if (want.kind) q.set('kind', want.kind);
  if (want.tag) q.set('tag', want.tag);
  want.url = API + '/jobs?' + q;
  return want;
}

// Draws the answer for `want`; false when it must be fetched again instead: the user paged or
// filtered meanwhile, or the page vanished (its jobs were deleted) and the last one is asked.
export function showPage(want, list, total) {
  if (want.offset !== view.offset || want.state !== view.state || want.kind !== view.kind || want.tag !== view.tag)
    return false;
  if (list.length === 0 && total > 0 && view.offset > 0) {
    view.offset = Math.max(0, Math.floor((total - 1) / PAGE) * PAGE);
    return false;
  }
  renderJobs(list, total);
  return true;
}

function renderJobs(list, total) {
  const body = $('jobs-body');
  const want = [];
  const seen = new Set();
  for (const j of list) {
    let r = rows.get(j.id);
    if (!r) {
      r = makeRow(j.id, () => toggleDetail(j.id));
      r.c.btn.after(jobLink(j.id));
      rows.set(j.id, r);
    }
    updateRow(r, j);
    setAttr(r.c.btn, 'aria-expanded', String(!!shown && shown.id === j.id));
    seen.add(j.id);
    want.push(r.tr);
    if (shown && shown.id === j.id) {
      shown.job = {...shown.job, ...j};
      shown.listed = true;
      want.push(shown.tr);
    }
  }
  for (const id of rows.keys()) if (!seen.has(id)) rows.delete(id);
  // A job that left this page closes its detail; one just submitted may not be listed yet.
  if (shown && !seen.has(shown.id) && shown.listed) closeDetail();
  // Move only what changed place, so a focused row keeps its focus across refreshes.
  let cur = body.firstChild;
  for (const e of want) {
    if (e === cur) { cur = cur.nextSibling; continue; }
    body.insertBefore(e, cur);
  }
  while (cur) { const n = cur.nextSibling; cur.remove(); cur = n; }

  const empty = $('jobs-empty');
  empty.hidden = list.length > 0;
  setText(empty, view.state || view.kind || view.tag ? 'No jobs match these filters.' : 'No jobs yet.');
  const a = list.length ? view.offset + 1 : 0, b = view.offset + list.length;
  const range = list.length ? 'showing ' + a + '\u2013' + b + ' of ' + total : 'showing 0 of ' + total;
  for (const e of document.querySelectorAll('.range')) setText(e, range);
  for (const e of document.querySelectorAll('.prev')) e.disabled = view.offset === 0;
  for (const e of document.querySelectorAll('.next')) e.disabled = view.offset + PAGE >= total;
}

function setPage(offset) {
  view.offset = Math.max(0, offset);
  closeDetail();
  refresh();
}

// A job just submitted: the first page, with no filter that could hide it, its detail open.
export function showJob(id) {
  view.offset = 0;
  view.state = view.kind = view.tag = '';
  $('f-state').value = $('f-kind').value = $('f-tag').value = '';
  closeDetail();
  if (id != null) openDetail(id); else refresh();
}

export function initJobs() {
  for (const e of document.querySelectorAll('.prev')) e.addEventListener('click', () => setPage(view.offset - PAGE));
  for (const e of document.querySelectorAll('.next')) e.addEventListener('click', () => setPage(view.offset + PAGE));
  $('f-state').addEventListener('change', (e) => { view.state = e.target.value; setPage(0); });
  $('f-kind').addEventListener('change', (e) => { view.kind = e.target.value; setPage(0); });
  $('f-tag').addEventListener('change', (e) => { view.tag = e.target.value.trim(); setPage(0); });
  // the list comes first; the form is under it
  $('to-new-job').addEventListener('click', () => $('new-job').scrollIntoView({behavior: 'smooth'}));
}
