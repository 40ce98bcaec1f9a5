/**
 * A count per key (units or leases in flight per identifier) whose busy keys are not deleted and set again
 * at every turn. A Map deletion leaves the key's slot in its hash chain until V8 next compacts the table,
 * so a key deleted when its count falls to 0 and set again at its next use walks its own past copies once
 * thousands of other keys are counted: tens of µs per use. Here a key at 0 keeps its entry until those at 0
 * outnumber those above it (plus 64); then one pass drops them all, at least that many decrements apart.
 *
 * That pass builds a new Map of the keys above 0 rather than deleting from the old one. A Map that deletes
 * and sets over and over rehashes into a new table every so often, and V8 keeps each old table pointing
 * to the one that replaced it (for iterators that may still walk it). Once one of those tables has been
 * promoted to the old generation, it keeps every later table, and the keys in them, alive through every
 * young collection until the next full one, which they bring sooner (test/kernel/counts.test.ts: about 18
 * bytes promoted per use on Node.js 20, full collections on 26). A Map that is replaced takes its tables
 * with it: the chain ends there.
 */
export class Counts {
  private counts = new Map<string, number>();
  /** Keys above 0. */
  private above = 0;

  /** Keys whose count is above 0. */
  get size(): number {
    return this.above;
  }

  /** The key's count (0 when it has none). */
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  add(key: string, n: number): void {
    const had = this.counts.get(key) ?? 0;
    if (had <= 0) this.above++;
    this.counts.set(key, had + n);
  }

  /** Takes `n` off the key's count; what falls to 0 or below counts 0. */
  take(key: string, n: number): void {
    const had = this.counts.get(key) ?? 0;
    if (had <= 0) return;
    const left = had - n;
    if (left > 0) {
      this.counts.set(key, left);
      return;
    }
    this.counts.set(key, 0);
    this.above--;
    if (this.counts.size > 2 * this.above + 64) {
      const kept = new Map<string, number>();
      for (const [k, c] of this.counts) if (c > 0) kept.set(k, c);
      this.counts = kept;
    }
  }
}
