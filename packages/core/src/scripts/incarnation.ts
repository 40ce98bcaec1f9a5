import { randomBytes } from 'node:crypto';
import type { Algorithm } from './types';
import { giveCostOf } from './units';

/*
 * Incarnations: which life of a state key an undo receipt belongs to (docs/refunds.md, docs/design.md
 * section 4).
 *
 * A receipt names a window, a bucket, a TAT or a millisecond, and the give-back applies it while that is
 * still current. That cannot tell two lives of one key apart: after reset() deletes the key, a new check
 * in the same window, bucket or millisecond writes the same names again, and a refund of a decision taken
 * before the reset gave a unit back to a window that never took it (6 admitted in a window of 5). So a
 * key gets an incarnation when a check that answers receipts (the refundable script, and a Cluster's
 * split one) commits to it and finds none: a number the check brought (every check's last ARGV, unique
 * per process and check), kept in the key until it is deleted or expires. Each receipt carries it, and a
 * give-back runs only while the key holds the same one: a reset, an expiry or anything that recreated the
 * key makes the old receipts no-ops. A check that answers no receipts keeps an incarnation it finds, and
 * makes none (a key of a limiter without refunds never holds one).
 *
 * Where each algorithm keeps it: the hash field 'i' (fixed window, sliding window, token bucket; no rule's
 * field is named 'i'), or, for sliding log's list, the negated number after the last entry, which every
 * version reads as a timestamp far outside any window (so older processes beside newer ones stay correct).
 * A receipt is '<incarnation>#<items>', or the items alone when the key had none.
 */

/** The hash field that holds a key's incarnation. */
export const INCARNATION_FIELD = 'i';

/**
 * Incarnations are integers in [2^52, 2^53): every one has 16 digits and is exact in a double, so the Lua
 * and the JavaScript twin write it the same, and sliding log's negated one is below any timestamp minus
 * any window. Each process starts at a random point and counts on.
 */
const SPAN = 2 ** 52;
let next = Number(randomBytes(8).readBigUInt64BE() % BigInt(SPAN));

/** A new incarnation, for the ARGV of one check. */
export function newIncarnation(): string {
  next = (next + 1) % SPAN;
  return String(SPAN + next);
}

/** A receipt bound to the key's incarnation (none: the items alone, as the script writes it). */
export function bindReceipt(incarnation: string | undefined, items: string): string {
  return incarnation === undefined ? items : `${incarnation}#${items}`;
}

/**
 * Gives `cost` back from `stored` in place (the twin of fg_give), only while it holds the receipt's
 * incarnation. `cost`: a give-back's ARGV[1] (units.ts), one number or a cost per unit.
 */
export function giveBackTwin(algorithm: Algorithm, stored: unknown, receipt: string, cost: number | string): void {
  const sep = receipt.indexOf('#');
  const incarnation = sep === -1 ? undefined : receipt.slice(0, sep);
  if (algorithm.undo.twin.incarnation(stored) !== incarnation) return;
  algorithm.undo.twin.undo(stored, sep === -1 ? receipt : receipt.slice(sep + 1), giveCostOf(cost));
}

/** Lua: fg_inc for a hash key (fixed window, sliding window, token bucket): its incarnation, or ''. */
export const HASH_INCARNATION = `
local function fg_inc(key)
  return redis.call('HGET', key, '${INCARNATION_FIELD}') or ''
end
`;

/**
 * Lua: the give-back of one key, the twin of giveBackTwin (needs the algorithm's fg_inc and fg_undo); `cost`
 * is fg_cost's function of a field's unit (units.ts).
 */
export const LUA_GIVE = `
local function fg_give(key, receipt, cost)
  local sep = string.find(receipt, '#', 1, true)
  local inc = ''
  if sep then
    inc = string.sub(receipt, 1, sep - 1)
    receipt = string.sub(receipt, sep + 1)
  end
  if fg_inc(key) == inc then fg_undo(key, receipt, cost) end
end
`;

/**
 * Lua for a save: when the script makes incarnations (it answers receipts) and the key has none (`inc`
 * nil), `inc` becomes the check's own, and `write` (a statement, or '') stores it; '' for the plain script.
 */
export function adoptLua(incarnations: boolean, write: string): string {
  if (!incarnations) return '';
  return write === '' ? 'if not inc then inc = NONCE end' : `if not inc and NONCE then\n  inc = NONCE\n  ${write}\nend`;
}

/** Lua: the identifier's receipt, the items expression bound to `inc`. */
export function boundReceiptLua(items: string): string {
  return `(inc and (inc .. '#') or '') .. ${items}`;
}
