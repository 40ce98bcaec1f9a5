import type { Rule } from '../config/rules';
import type { Algorithm, FrameContext, FrameStorage, Twin } from './types';
import { readRuleArgs, RULE_ARGS, ruleArgs, ruleCosts } from './frame';
import { giveBackTwin } from './incarnation';
import { costTotal } from './units';

/*
 * The settle of a reservation (docs/budgets.md): one script call that gives back what the actual cost left
 * of the estimate and charges what it went past it, for every identifier of the reservation. Its Lua is
 * generated per rule set (compiler/settle.ts); this is the protocol and its JavaScript twin.
 *
 * KEYS: per identifier its state key (the identifiers the reserving check consumed for).
 * ARGV[1] the give-back: one number for every unit, or '<unit>=<n>' per unit joined by ',' (units.ts)
 * ARGV[2] the charge: the check's cost format (one number, or one per unit joined by ':')
 * ARGV[3] now ('' in production: Redis TIME), ARGV[4] TTL padding
 * ARGV[5] the number of rules R, then RULE_ARGS values per rule, as a check's (the Lua has them as constants)
 * then the incarnation a key without one gets when the charge writes it (incarnation.ts)
 * then per identifier: its mask, its receipt from the reserving check ('' for none)
 * Reply: 1.
 *
 * Per identifier: the receipt's give-back (fg_give: only what the windows or buckets still hold, only in the
 * key's incarnation, so a settle after a reset gives nothing back), then, when the charge is more than 0,
 * each applicable rule's field committed at its unit's charge with no admission test: past the limit, the
 * identifier stays denied until its windows or bucket have paid it off. A token bucket owes at most one
 * window beyond empty (token-bucket.ts).
 */

/** ARGV of a settle. */
export function settleArgs(
  algorithm: Algorithm,
  rules: readonly Rule[],
  give: string | number,
  charge: string | number,
  nowArg: string,
  pad: number,
  incarnation: string,
  masks: readonly string[],
  receipts: readonly string[],
): (string | number)[] {
  const argv: (string | number)[] = [give, charge, nowArg, pad, ...ruleArgs(rules, algorithm), incarnation];
  masks.forEach((mask, i) => argv.push(mask, receipts[i]!));
  return argv;
}

/** The JavaScript twin of the settle script, over the same KEYS and ARGV. */
export function runSettle(
  algorithm: Algorithm,
  storage: FrameStorage,
  keys: readonly string[],
  argv: readonly (string | number)[],
  clockNow: number,
): number {
  const twin = algorithm.twin as Twin<unknown, unknown>;
  const now = argv[2] === '' ? clockNow : Number(argv[2]);
  const nr = Number(argv[4]);
  // After the rules' values (ARGV[5 ...]): the incarnation, then per key its mask and receipt.
  const at = 5 + RULE_ARGS * nr;
  const inc = String(argv[at]);
  const ctx: FrameContext = {
    now,
    pad: Number(argv[3]),
    window: [],
    limit: [],
    burst: [],
    precision: [],
    field: [],
    incarnation: /^[1-9]\d*$/.test(inc) ? inc : undefined,
    charge: true,
  };
  readRuleArgs(ctx, argv, 4, nr);
  const costs = ruleCosts(ctx, argv[1]!);
  const charging = costTotal(argv[1]!) > 0;
  keys.forEach((key, i) => {
    const mask = String(argv[at + 1 + 2 * i]);
    const receipt = String(argv[at + 2 + 2 * i]);
    if (receipt !== '') {
      const stored = storage.get(key, now);
      if (stored !== undefined) giveBackTwin(algorithm, stored, receipt, argv[0]!);
    }
    if (!charging) return;
    const js: number[] = [];
    for (let j = 0; j < nr; j++) if (mask.charCodeAt(j) === 49) js.push(j);
    const st = twin.load(storage.get(key, now), ctx);
    for (const j of js) twin.commit(st, j, costs[j]!, ctx);
    const saved = twin.save(st, js, ctx);
    if (saved) storage.save(key, saved.value, saved.ttlMs, now);
  });
  return 1;
}
