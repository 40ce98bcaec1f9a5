/** Output helpers: durations, times and aligned tables for people; --json prints objects instead. */

/** A duration for people: 9m 58s, 1h 2m, 850ms, 2d 3h (two units at most). */
export function human(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ];
  const parts: string[] = [];
  let rest = Math.ceil(ms / 1_000) * 1_000;
  for (const [unit, size] of units) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
    if (parts.length === 2) break;
  }
  return parts.join(' ');
}

/** An instant as ISO 8601, UTC, whole seconds (the CLI's times are Redis's clock). */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Rows under a header, columns left-aligned and separated by two spaces. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
