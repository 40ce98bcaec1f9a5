/** Output helpers: durations, times and aligned tables for people; --json prints objects instead. */

/*
 * What the command line prints was often written by someone else: a block reason by application code (from
 * a request, as often as not), identifiers by clients, anything in Redis by whoever can write there, and an
 * identifier the operator pasted from a log. Raw, an escape sequence clears the screen or sets the window
 * title, a newline forges a table row, a bidi override reverses what is read. Every field is printed
 * through printable(); the program's own text (the template around the fields) is the only raw text.
 */

/**
 * C0 (with ESC, CR, LF, TAB, NUL), DEL and C1 (Cc); format characters (Cf: bidi overrides and isolates,
 * zero-width characters, BOM, tag characters); line and paragraph separators; lone surrogates. And the
 * backslash, so that an escape printed can only have come from this function.
 */
const UNPRINTABLE = /[\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
const SHORT: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeCodePoint(c: string): string {
  const cp = c.codePointAt(0)!;
  const hex = cp.toString(16);
  if (cp < 0x100) return `\\x${hex.padStart(2, '0')}`;
  return cp <= 0xffff ? `\\u${hex.padStart(4, '0')}` : `\\u{${hex}}`;
}

/** `value` safe to print on a terminal: every character above escaped visibly (\x1b, \n, \u202e, \\). */
export function printable(value: unknown): string {
  return String(value).replace(UNPRINTABLE, (c) => SHORT[c] ?? escapeCodePoint(c));
}

/** A template for text lines: every value in it printable(); the literal text is the program's own. */
export function safe(strings: TemplateStringsArray, ...values: unknown[]): string {
  return strings.reduce((out, literal, i) => out + (i === 0 ? '' : printable(values[i - 1])) + literal, '');
}

/**
 * JSON for --json: JSON.stringify escapes C0, quotes and backslashes, but leaves DEL, C1, format characters
 * and separators raw. Those can only be inside strings, where \uXXXX (per UTF-16 unit) reads back the same.
 * Indented by two spaces, or on one line with `indent` 0 (an error on stderr).
 */
export function jsonText(value: unknown, indent = 2): string {
  return JSON.stringify(value, null, indent).replace(/[\x7f-\x9f\p{Cf}\p{Zl}\p{Zp}]/gu, (c) =>
    // split(''): UTF-16 units, so a tag character (outside the BMP) becomes its surrogate pair's escapes.
    c
      .split('')
      .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join(''),
  );
}

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

/** Rows under a header, columns left-aligned and separated by two spaces; every cell printable(). */
export function table(header: readonly string[], cells: readonly (readonly string[])[]): string {
  const rows = cells.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
