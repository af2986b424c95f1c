// dom.js: the dashboard's DOM helpers: find by id, build an element or an SVG node, and set
// text or an attribute only when it changes (so a refresh that changes nothing moves nothing).
// Server strings reach the DOM, here and in every module, as textContent or attributes, never as
// markup.

export const $ = (id) => document.getElementById(id);

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

export function setText(e, s) { if (e.textContent !== s) e.textContent = s; }
export function setAttr(e, k, v) { if (e.getAttribute(k) !== v) e.setAttribute(k, v); }

const SVGNS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, String(attrs[k]));
  if (text != null) e.textContent = text;
  return e;
}
