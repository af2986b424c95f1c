// refresh.js: the one way for a panel to ask for fresh data now (after a submit, a cancel, a
// page change, a token). The refresh loop in app.js registers itself here, so that the panels
// it draws need not import it back.

let loop = () => {};

export function refresh() { return loop(); }
export function setRefresh(f) { loop = f; }
