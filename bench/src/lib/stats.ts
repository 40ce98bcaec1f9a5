/* Small helpers shared by the benchmark reports. */

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Whole numbers with thousands separators; ratios with two decimals. */
export function fmt(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return 'n/a';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A GitHub-flavoured Markdown table. */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/**
 * Reads a numeric option from the environment, so short and long runs need no code change. `zero`: 0 is
 * accepted too (an option where 0 turns something off).
 */
export function envInt(name: string, fallback: number, zero = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (n === 0 && !zero)) {
    throw new Error(`${name} must be a ${zero ? 'number, 0 or more' : 'positive number'}; got ${raw}`);
  }
  return n;
}
