import { lit } from './compiler/lua';
import type { PairEval } from './types';

/*
 * A debt past one window (docs/budgets.md, "What a low estimate buys"): what a settle charges beyond a rule's
 * limit is paid off at the limit's rate, however many windows that takes.
 *
 * The window algorithms (fixed window, sliding window) hold a charge in their window state only until it
 * leaves the window; what it went past the limit would then be forgotten. So a charge past the limit also
 * writes the time its excess is paid off, `u` (ms since the epoch), per state field:
 *   u := max(u, NOW + hold) + ceil(x * W / L)
 * where `hold` is when the window state lets go of the charge (the end of the fixed window; when the
 * sliding window's current bucket leaves), x the units past the limit (the whole charge when a debt is
 * already outstanding), W and L the rule's window and limit. Until then, the debt still owed counts beside
 * the window's own count, ceil((u - NOW) * L / W) units: a rule admits nothing while it is L or more, and
 * admits again at the rate a client within the limit has. One number per field, whatever the debt: the
 * state per identifier stays bounded. The token bucket keeps its debt in its own TAT (token-bucket.ts) and
 * the sliding log dates its newest entries later (sliding-log.ts).
 *
 * Every value is an integer, (u - NOW) * L stays below 2^52 (DEBT_CAP), so the Lua and JavaScript twins
 * agree bit for bit.
 */

/** The suffix of a debt's field in a hash: the state field's name, then '~'. */
export const DEBT_SUFFIX = '~';

/** The longest a debt runs, in ms, for a rule of limit `limit`: about 35 years, and (u - NOW) * L < 2^52. */
export const debtCapMs = (limit: number): number => Math.min(2 ** 40, Math.floor(2 ** 52 / Math.max(limit, 1)));

/** The units a debt paid off at `u` still owes at `now` (0 for none). */
export function owed(u: number, now: number, limit: number, window: number): number {
  return u > now ? Math.floor(((u - now) * limit + (window - 1)) / window) : 0;
}

/**
 * A rule's evaluation with its debt: `ev` is the window state's own (whose count is `count`), `u` the debt's
 * payoff time. Available units less what is owed; reset no earlier than the payoff; and when the cost does
 * not fit, a retry no earlier than when the debt leaves room for it (with the window's count as it is, or,
 * when that leaves no room, as it will be once the window lets go of it).
 */
export function withDebt(ev: PairEval, u: number, count: number, cost: number, limit: number, window: number, now: number): PairEval {
  if (u <= now) return ev;
  const owe = owed(u, now, limit, window);
  let [avail, reset, retry] = ev;
  avail = Math.max(avail - owe, 0);
  if (u - now > reset) reset = u - now;
  if (cost > 0 && cost <= limit && count + owe + cost > limit) {
    let room = limit - cost - count;
    if (room < 0) room = limit - cost;
    const t = u - now - Math.floor((room * window) / limit);
    if (t > retry) retry = t;
  }
  return [avail, reset, retry];
}

/** The Lua of withDebt: adjusts avail, reset and retry (set by the window's own evaluation) in place. */
export function withDebtLua(u: string, count: string, cost: string, limit: number, window: number): string {
  return `if ${u} > NOW then
  local owe = floor(((${u} - NOW) * ${lit(limit)} + ${lit(window - 1)}) / ${lit(window)})
  avail = avail - owe
  if avail < 0 then avail = 0 end
  if ${u} - NOW > reset then reset = ${u} - NOW end
  if ${cost} > 0 and ${cost} <= ${lit(limit)} and ${count} + owe + ${cost} > ${lit(limit)} then
    local room = ${lit(limit)} - ${cost} - ${count}
    if room < 0 then room = ${lit(limit)} - ${cost} end
    local t = ${u} - NOW - floor(room * ${lit(window)} / ${lit(limit)})
    if t > retry then retry = t end
  end
end`;
}

/**
 * A charge's new payoff time: `count` is the window's count after the charge of `cost`, `hold` the ms until
 * the window state lets go of it. Unchanged when the charge stays within the limit.
 */
export function charged(u: number, count: number, cost: number, hold: number, limit: number, window: number, now: number): number {
  if (cost <= 0) return u;
  const x = u > now ? cost : count - limit;
  if (x <= 0) return u;
  const next = Math.max(u, now + hold) + Math.floor((x * window + (limit - 1)) / limit);
  return Math.min(next, now + debtCapMs(limit));
}

/** The Lua of charged: sets `u` in place. */
export function chargedLua(u: string, count: string, cost: string, hold: string, limit: number, window: number): string {
  return `if ${cost} > 0 then
  local x = ${cost}
  if ${u} <= NOW then x = ${count} - ${lit(limit)} end
  if x > 0 then
    local from = NOW + ${hold}
    if ${u} > from then from = ${u} end
    ${u} = from + floor((x * ${lit(window)} + ${lit(limit - 1)}) / ${lit(limit)})
    if ${u} - NOW > ${lit(debtCapMs(limit))} then ${u} = NOW + ${lit(debtCapMs(limit))} end
  end
end`;
}
