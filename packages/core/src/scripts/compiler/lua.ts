/** Lua source text: literals and indentation, for the compiler and the algorithms' templates. */

/** A number as a Lua literal (an integer below 2^53: exact in Lua's doubles). */
export const lit = (n: number): string => {
  if (!Number.isSafeInteger(n)) throw new Error(`generated scripts take safe integers; got ${n}`);
  return String(n);
};

/** A string as a Lua literal. */
export const str = (s: string): string => JSON.stringify(s);

/** Indents every non-empty line of `text` by `n` spaces. */
export function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((line) => (line === '' ? line : pad + line))
    .join('\n');
}
