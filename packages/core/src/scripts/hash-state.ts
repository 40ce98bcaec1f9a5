import type { FrameContext, SavedValue } from './types';
import { INCARNATION_FIELD } from './incarnation';
import { DEFAULT_UNIT } from '../config/rules';

/*
 * JavaScript helpers shared by the twins of the algorithms that keep one hash per identifier (fixed
 * window, sliding window, token bucket).
 */

/**
 * The twin of a hash save: the value to keep and its TTL, the largest `ttlOf(j)` (and `hold`, what state the
 * rules do not own still needs) plus the test-mode pad.
 */
export function savedHash<V>(
  value: V,
  js: readonly number[],
  ttlOf: (j: number) => number,
  ctx: FrameContext,
  hold = 0,
): SavedValue<V> | undefined {
  if (js.length === 0) return undefined;
  let ttl = hold;
  for (const j of js) ttl = Math.max(ttl, ttlOf(j));
  return { value, ttlMs: ttl + ctx.pad };
}

/**
 * An identifier's undo receipt: one item per distinct field among the consumed rules `js` (two rules
 * sharing a field consumed once), in first-rule order, joined by ',', as the script's F.<field>_receipt
 * items are. `item(j)` gives [field, text].
 */
export function hashReceipt(js: readonly number[], item: (j: number) => [field: string, text: string]): string {
  const byField = new Map(js.map((j) => item(j)));
  return [...byField.values()].join(',');
}

/**
 * A receipt's items, each split at ':' into numbers, with the unit of its field ('' has none): the field's
 * unit suffix ('@tokens', units.ts) is taken out of the numbers.
 */
export function receiptItems(receipt: string): { nums: number[]; unit: string }[] {
  if (receipt === '') return [];
  return receipt.split(',').map((item) => {
    const at = item.indexOf('@');
    if (at === -1) return { nums: item.split(':').map(Number), unit: DEFAULT_UNIT };
    const end = item.indexOf(':', at);
    return { nums: (item.slice(0, at) + item.slice(end)).split(':').map(Number), unit: item.slice(at + 1, end) };
  });
}

/** The incarnation a stored hash holds (its field 'i'), for the give-back's twin. */
export function hashIncarnation(stored: Map<string, unknown> | undefined): string | undefined {
  const inc = stored?.get(INCARNATION_FIELD);
  return typeof inc === 'string' ? inc : undefined;
}
