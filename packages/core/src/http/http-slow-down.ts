import { ConfigError, describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import { createHttpLimiter } from './http-limiter';
import { HTTP_OPTION_KEYS, type HttpOptions } from './options';
import { failedOutcome, type HttpOutcome } from './outcome';
import { pairLimiter } from './pairing';
import type { Limiter } from '../engine/limiter';
import { LIMITER_OPTION_KEYS } from '../engine/options';
import { fnOption } from '../config/validate';
import { optionNames, type OptionTable } from '../config/option-table';
import type { WarningName } from '../kernel/warnings';
import type { MaybePromise } from './option-types';
import { pause, type ResponseLike } from './node';
import { assertKnownOptions, ownOptions } from '../config/own-options';

/*
 * slowDown (docs/slow-down.md): after `delayAfter` requests in the window, each further request waits
 * `delayMs` before it goes on, capped by `maxDelayMs`. It counts with a limiter like rateLimit's, and never
 * refuses for the count: a request past the rule's limit is delayed too (by the same formula). On a limiter
 * shared with rateLimit, a request is counted once for both, so a client is first slowed, then refused.
 */

/** Options of every adapter's `slowDown()`, besides rateLimit's. `Req` is the framework's request. */
export interface SlowDownHttpOptions<Req> extends Omit<HttpOptions<Req>, 'settle'> {
  /** Requests in the window that go undelayed: a non-negative integer. Default 1. */
  delayAfter?: number;
  /**
   * The delay of each request past `delayAfter`: ms (the same for each), or a function of `used` (the
   * requests in the window, this one included) and the request. Default `(used) => (used - delayAfter) * 1000`.
   */
  delayMs?: number | ((used: number, req: Req) => MaybePromise<number>);
  /** The longest delay, in ms: from 1 to 600000 (10 minutes). Default 30000. */
  maxDelayMs?: number;
}

/** slowDown's own options, declared once (checked together by resolveDelays: each bounds the others). */
const SLOW_DOWN_OPTIONS: OptionTable<Omit<SlowDownHttpOptions<unknown>, keyof HttpOptions<unknown>>> = {
  delayAfter: {},
  delayMs: {},
  maxDelayMs: {},
};
export const SLOW_DOWN_OPTION_KEYS = optionNames(SLOW_DOWN_OPTIONS);

/** The default and the largest `maxDelayMs`: a delay holds a socket and a timer, so it is always bounded. */
export const DEFAULT_MAX_DELAY_MS = 30_000;
export const MAX_DELAY_MS = 600_000;

/** What slowDown tells the application about a request (`req.slowDown`, `request.slowDown`, `ctx.state.slowDown`). */
export interface SlowDownInfo {
  /** Requests in the window, this one included (the binding rule's count); Infinity when unknown. */
  used: number;
  delayAfter: number;
  /** The delay this request waited, in ms. */
  delayMs: number;
  /** The limiter's decision the delay was computed from. */
  decision: Decision;
}

/**
 * What the adapter does once the delay is over: pass on (`next`, with `info`), answer with `status` and
 * `body` (`deny`: the deny list, a block, failure 'closed', unidentified 'deny'), hand `error` to the
 * framework, or nothing at all (`gone`: the client left during its delay; it must not reach a handler).
 */
export interface SlowDownOutcome extends Omit<HttpOutcome, 'action' | 'own' | 'self'> {
  action: 'next' | 'deny' | 'error' | 'gone';
  info?: SlowDownInfo;
  /** The HTTP layer's outcome, for completed() (refund options). */
  outcome?: HttpOutcome;
}

export interface HttpSlowDown<Req> {
  readonly limiter: Limiter;
  /**
   * Decides one request and waits out its delay. Resolves once the request may go on, or at once with
   * `gone` when `res` closes during the delay (the timer cleared). Never rejects: errors are outcomes.
   */
  run(req: Req, ip: string | undefined, res: ResponseLike): Promise<SlowDownOutcome>;
  warn(name: WarningName, message: string): void;
  /** As rateLimit's completed(): gives a request's units back when the refund options say so. */
  completed(outcome: HttpOutcome, finished: boolean, status: number, args: readonly unknown[]): void;
}

interface Delays<Req> {
  delayAfter: number;
  delayMs: number | ((used: number, req: Req) => MaybePromise<number>) | undefined;
  maxDelayMs: number;
}

function resolveDelays<Req>(options: SlowDownHttpOptions<Req>): Delays<Req> {
  const { delayAfter = 1, maxDelayMs = DEFAULT_MAX_DELAY_MS } = options;
  if (typeof delayAfter !== 'number' || !Number.isInteger(delayAfter) || delayAfter < 0) {
    throw new ConfigError(
      'delayAfter',
      `must be a non-negative integer (requests in the window before delays start); got ${describeValue(delayAfter)}`,
    );
  }
  if (typeof maxDelayMs !== 'number' || !Number.isInteger(maxDelayMs) || maxDelayMs < 1 || maxDelayMs > MAX_DELAY_MS) {
    throw new ConfigError('maxDelayMs', `must be an integer of ms from 1 to ${MAX_DELAY_MS}; got ${describeValue(maxDelayMs)}`);
  }
  const delayMs = options.delayMs;
  if (typeof delayMs === 'number') {
    if (!Number.isFinite(delayMs) || delayMs < 0) {
      throw new ConfigError(
        'delayMs',
        `must be a non-negative number of ms or a function (used, req) => ms; got ${describeValue(delayMs)}`,
      );
    }
  } else fnOption(delayMs, 'delayMs');
  return { delayAfter, delayMs, maxDelayMs };
}

/**
 * The requests a decision counted in its window (this one included). No count known: 0 when admitted (no
 * rule applied, or the failure policy admitted it: an outage must not delay everyone), Infinity when
 * denied in this process (the longest delay).
 */
export function usedOf(decision: Decision): number {
  if (!Number.isFinite(decision.limit)) return decision.allowed ? 0 : Infinity;
  return Math.max(0, decision.limit - decision.remaining + (decision.allowed ? 0 : decision.cost));
}

/**
 * The delay of a request that `used` counts, before the cap: 0 up to `delayAfter`; then `delayMs`, its
 * function's answer, or by default a second per request past `delayAfter`. A function's answer that is
 * not a non-negative number is an error (the request fails: it is never let through undelayed for it).
 */
export function delayOf<Req>(delays: Delays<Req>, used: number, req: Req): MaybePromise<number> {
  const { delayAfter, delayMs, maxDelayMs } = delays;
  if (used <= delayAfter) return 0;
  // No count known (a denial made in this process): the longest delay, never none.
  if (used === Infinity) return maxDelayMs;
  const capped = (ms: unknown): number => {
    if (typeof ms !== 'number' || Number.isNaN(ms) || ms < 0) {
      throw new TypeError(`floodgate: delayMs(used, req) must return a non-negative number of ms; got ${describeValue(ms)}`);
    }
    return Math.ceil(Math.min(ms, maxDelayMs));
  };
  if (typeof delayMs === 'number') return capped(delayMs);
  if (delayMs === undefined) return capped((used - delayAfter) * 1000);
  const ms = delayMs(used, req);
  return ms instanceof Promise ? ms.then(capped) : capped(ms);
}

/**
 * Validates an adapter's `slowDown()` options once and returns what every request needs. `extraKeys` are
 * the adapter's own options; `defaultUser` reads the framework's authenticated user id.
 */
export function createHttpSlowDown<Req>(
  options: SlowDownHttpOptions<Req>,
  extraKeys: readonly string[] = [],
  defaultUser?: (req: Req) => unknown,
): HttpSlowDown<Req> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('options', `must be an object with \`limits\` or \`limiter\`; got ${describeValue(options)}`);
  }
  assertKnownOptions(options, [...LIMITER_OPTION_KEYS, ...HTTP_OPTION_KEYS, ...SLOW_DOWN_OPTION_KEYS, ...extraKeys]);
  const own = ownOptions(options);
  const delays = resolveDelays(own);
  const rest: Record<string, unknown> = { ...own };
  for (const key of SLOW_DOWN_OPTION_KEYS) delete rest[key];
  // No rate-limit headers unless asked for, as express-slow-down: a rateLimit on the same limiter sends them.
  rest.headers = own.headers ?? false;
  const http = createHttpLimiter<Req>(rest as HttpOptions<Req>, extraKeys, defaultUser, 'slow');
  const limiter = http.limiter;
  const largest = Math.max(
    ...(limiter.plans?.length > 0 ? limiter.plans.flatMap((p) => limiter.rulesOf(p)) : limiter.rules).map((r) => r.limit),
  );
  // A request past the limit counts as limit + 1: a larger delayAfter could never slow anything.
  if (delays.delayAfter > largest) {
    throw new ConfigError(
      'delayAfter',
      `is ${delays.delayAfter}, above every rule's limit (at most ${largest}): no request would ever be slowed`,
    );
  }
  pairLimiter(limiter);
  const shadow = limiter.mode === 'shadow';

  const failed = (error: unknown): SlowDownOutcome => failedOutcome(error, 'delayMs') as SlowDownOutcome;

  async function run(req: Req, ip: string | undefined, res: ResponseLike): Promise<SlowDownOutcome> {
    try {
      const outcome = await http.decide(req, ip);
      if (outcome.action !== 'next' || outcome.self === undefined) {
        // Refused for a reason other than the count, an error, or not limited at all (skip, the allow list).
        return { ...outcome, outcome };
      }
      const decision = outcome.self;
      const used = decision.source === 'list' ? 0 : usedOf(decision);
      const ms = await delayOf(delays, used, req);
      const info: SlowDownInfo = { used, delayAfter: delays.delayAfter, delayMs: ms, decision };
      // A client that leaves during its delay: no handler, no refund (it stays counted: leaving early must
      // never buy a faster next request).
      // Shadow mode enforces nothing: the delay is reported (req.slowDown), not waited.
      if (!(await pause(res, shadow ? 0 : ms))) return { action: 'gone', status: 499, set: [], append: [], decision, info };
      return { action: 'next', status: 200, set: outcome.set, append: outcome.append, decision, info, outcome };
    } catch (error) {
      return failed(error);
    }
  }

  return { limiter, run, warn: http.warn, completed: http.completed };
}
