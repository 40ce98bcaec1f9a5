/** Levenshtein distance, case-insensitive: how many single-character edits turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * The name of `known` closest to a mistyped `name` (at most `maxEdits` edits away), for a "did you mean"
 * hint; undefined when none is that close. Ties go to the first in `known`.
 */
export function closestName(name: string, known: readonly string[], maxEdits = 2): string | undefined {
  let best: string | undefined;
  let bestDistance = maxEdits + 1;
  for (const k of known) {
    const d = editDistance(name, k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}
