// format.js: how figures read on the dashboard: bytes, clocks, numbers, percentages, counts,
// durations and times (an em dash where a figure is missing). Formats that one panel alone uses
// (the benchmarks' ratios and axis ticks) stay in that panel's module.

export const num = (v) => typeof v === 'number' && isFinite(v);

export function fmtBytes(n) {
  if (typeof n !== 'number' || !isFinite(n) || n < 0) return '\u2014';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)) + ' ' + units[i];
}

export function fmtClock(mhz) {
  if (typeof mhz !== 'number' || !(mhz > 0)) return '\u2014';
  return mhz >= 1000 ? (mhz / 1000).toFixed(2) + ' GHz' : mhz + ' MHz';
}

export function fmtNum(v) {
  if (typeof v !== 'number') return v == null ? '\u2014' : String(v);
  if (!isFinite(v) || Number.isInteger(v)) return String(v);
  if (v !== 0 && Math.abs(v) < 1e-4) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

export function fmtPct(v) {
  return (v >= 0.9995 && v <= 1 ? '100' : (v * 100).toFixed(1).replace(/\.0$/, '')) + '%';
}

// Counts and rates with digit groups (20,001,398 interactions, 128,000 samples/s), and past
// a billion in G (77.73G elements/s), where a row of digit groups no longer reads at a glance.
export function fmtQty(v) {
  if (!num(v) || Math.abs(v) < 1e4) return fmtNum(v);
  if (Math.abs(v) >= 1e9) return fmtNum(v / 1e9) + 'G';
  return (Number.isInteger(v) ? v : Number(v.toPrecision(4))).toLocaleString('en-US');
}

export function fmtDur(ms) {
  if (!(ms >= 0)) return '\u2014';
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
  const m = Math.floor(s / 60), h = Math.floor(m / 60);
  if (h === 0) return m + 'm ' + String(Math.floor(s % 60)).padStart(2, '0') + 's';
  return h + 'h ' + String(m % 60).padStart(2, '0') + 'm';
}

export function fmtTime(iso) {
  const t = Date.parse(iso);
  return isNaN(t) ? '\u2014' : new Date(t).toLocaleString();
}
