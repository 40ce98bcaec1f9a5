import type { Decision } from '../kernel/decision';
import { shared } from '../kernel/state';
import type { Cost, Limiter } from '../engine/limiter';
import type { MaybePromise } from './option-types';
import type { HttpRole } from './outcome';

/*
 * One limiter behind both slowDown and rateLimit (docs/slow-down.md): a request counts once for the two.
 * The first of them to check a request records its decision, and the other takes it over instead of
 * counting the request again (same identifiers, cost and plan; once), in either order.
 */

/** A decision one middleware made for a request, that a middleware of the other role on the same limiter takes over. */
interface Made {
  limiter: Limiter;
  role: HttpRole;
  key: string;
  decision: MaybePromise<Decision>;
}

/** Limiters that a slowDown shares with rateLimit: only their checks are recorded and looked up per request. */
const paired = shared('pairedLimiters', () => new WeakSet<Limiter>());
/** Per request: the decisions of paired limiters, until the other middleware takes them over (once). */
const made = shared('madeDecisions', () => new WeakMap<object, Made[]>());

/** Marks a limiter as shared by a slowDown: a request then counts once for slowDown and rateLimit together. */
export function pairLimiter(limiter: Limiter): void {
  paired.add(limiter);
}

/** Whether a slowDown shares this limiter (then its checks go through takeOver). */
export function isPaired(limiter: Limiter): boolean {
  return paired.has(limiter);
}

/**
 * The decision for this request of a limiter a slowDown shares: the one the other role already made (taken
 * over, once), else `check()`'s, recorded for the other role.
 */
export function takeOver(
  req: object,
  limiter: Limiter,
  role: HttpRole,
  ids: readonly string[],
  units: Cost,
  plan: string | undefined,
  check: () => MaybePromise<Decision>,
): MaybePromise<Decision> {
  const key = `${plan ?? ''}\n${typeof units === 'number' ? units : JSON.stringify(units)}\n${ids.join('\n')}`;
  const list = made.get(req);
  const at = list === undefined ? -1 : list.findIndex((m) => m.limiter === limiter && m.role !== role && m.key === key);
  if (at !== -1) return list!.splice(at, 1)[0]!.decision;
  const decision = check();
  const entry: Made = { limiter, role, key, decision };
  if (list === undefined) made.set(req, [entry]);
  else list.push(entry);
  return decision;
}
