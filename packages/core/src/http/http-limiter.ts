import { ConfigError, describeValue } from '../kernel/errors';
import { localDenial, type Decision } from '../kernel/decision';
import { isThenable } from '../kernel/thenable';
import { safeLogger } from '../kernel/logger';
import { resolveWarnings, logWarning, warned, type WarningName } from '../kernel/warnings';
import { assertKnownOptions, ownOptions } from '../config/own-options';
import { checkOptions } from '../config/option-table';
import { UNKNOWN_IP } from '../scripts/keys';
import {
  FloodgateLimiter,
  checkNow,
  createLimiter,
  currentLists,
  keepWhole,
  listCheck,
  type Cost,
  type Limiter,
  type RuleSetHandle,
} from '../engine/limiter';
import { resolveRequestLimits, type RequestLimits } from './request-limits';
import { LIMITER_OPTION_KEYS, type LimiterOptions } from '../engine/options';
import { noteIpv6Keying } from '../engine/overrides';
import { bindsTighter, resolveHeaderModes, retryAfterSeconds } from './headers';
import { checkOmittedUnits, omitHeaders, resolveOmitHeaders } from './header-filter';
import { defaultIdentifiers, identifiersFrom, normaliseIp, resolveIpv6Subnet } from './identity';
import {
  HTTP_OPTIONS,
  HTTP_OPTION_KEYS,
  checkCostFits,
  ownOrShared,
  unitsOfLimiter,
  type HttpOptions,
  type UnidentifiedPolicy,
} from './options';
import { NOTHING, failedOutcome, type HttpOutcome, type HttpRole } from './outcome';
import { isPaired, takeOver } from './pairing';
import { ResponseHeaders } from './response-headers';
import { Denials } from './denial';
import { refunder, resolveRefunds, type RefundOptions } from './refunds';
import { assertSettleable, reservations, resolveSettle, type SettleFn } from './settle';
import type { MaybePromise } from './option-types';
import { begin, end, ended } from './completion';

/*
 * createHttpLimiter: the decision every adapter's rateLimit() (and slowDown()) asks for a request, as a
 * pipeline of steps (docs/design.md, section 2): the deny list, skip, the identifiers, the cost, the plan,
 * the check, and the outcome the adapter writes (headers, a denial, or next). Each step that gets a
 * promise (an async option function, or a decision the block cache cannot give) continues when it
 * settles; everything else runs synchronously, so a client the block cache already denies costs no promise.
 */

export interface HttpLimiter<Req> {
  readonly limiter: Limiter;
  /** Decides one request. `ip` is the framework's resolved client IP; `previous` the request's decision so far. */
  run(req: Req, ip: string | undefined, previous?: Decision): Promise<HttpOutcome>;
  /**
   * run() without the promise when none is needed: the outcome itself when skip, identify, cost and message
   * answer synchronously and the decision comes from the block cache (a client that is already denied),
   * else a promise of it. Never throws: errors are the `error` outcome, as with run().
   */
  decide(req: Req, ip: string | undefined, previous?: Decision): HttpOutcome | Promise<HttpOutcome>;
  /** A named warning, once per process, through the limiter's logger. */
  warn(name: WarningName, message: string): void;
  /**
   * After the response of a request whose outcome has `own`: gives its units back when the refund options
   * say so, or settles its reservation (`settle`). `finished`: the response was sent in full; when false
   * (the connection closed first, whoever closed it) no refund is given, and a settle is still made (the
   * work was done up to then). `status` its status; `args` what requestWasSuccessful takes in this
   * framework. Never throws; a refund the store cannot take is a warning (the units stay counted: never
   * more admissions).
   */
  completed(outcome: HttpOutcome, finished: boolean, status: number, args: readonly unknown[]): void;
  /**
   * For a request that carries many checks (a tRPC batch): the checks this turn starts go to Redis in as few
   * script calls as they can, up to 1,000 checks a call, instead of leaving in calls of BATCH_MAX (16) as the turn goes on
   * (stores/turn-batches.ts). Lasts until the end of the turn; call it before the request's checks. Nothing to
   * do on a memory store, with batching off (FLOODGATE_BATCH_MAX=1), or for a shared `limiter` of your own
   * making (an object with a check() that is not a Floodgate limiter, nor a wrapper of one).
   */
  keepWhole(): void;
}

/** The limiter a rateLimit() checks: its own (refundable when its refund options or `settle` ask), or the shared one. */
function resolveLimiter<Req>(
  options: HttpOptions<Req>,
  refunds: RefundOptions,
  settle: SettleFn | undefined,
  limits: RequestLimits<Req> | undefined,
): Limiter {
  if (settle !== undefined && options.limiter === undefined) assertSettleable(undefined, options.refunds);
  const refundable = refunds.option !== undefined || settle !== undefined;
  const limiter = ownOrShared<Limiter>(
    (limits === undefined ? options : { ...options, limits: limits.placeholder }) as HttpOptions<Req> & Record<string, unknown>,
    LIMITER_OPTION_KEYS,
    // Giving units back needs the refundable script: this limiter's own, so it is made so.
    (core) => createLimiter((refundable ? { ...core, refunds: true } : core) as unknown as LimiterOptions),
    (shared) => typeof (shared as Partial<Limiter>).check === 'function',
    'createLimiter()',
  );
  if (options.limiter !== undefined && refunds.option !== undefined && limiter.refunds !== true) {
    throw new ConfigError(refunds.option, 'needs a shared limiter made with `refunds: true` (createLimiter({ ..., refunds: true }))');
  }
  if (settle !== undefined && options.limiter !== undefined) assertSettleable(limiter, options.refunds);
  return limiter;
}

/**
 * Validates an adapter's options once and returns what every request needs: the shared request -> outcome
 * logic, so adapters only read the request and write the outcome. `extraKeys` are the adapter's own options.
 */
export function createHttpLimiter<Req>(
  options: HttpOptions<Req>,
  extraKeys: readonly string[] = [],
  defaultUser?: (req: Req) => unknown,
  role: HttpRole = 'limit',
): HttpLimiter<Req> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('options', `must be an object with \`limits\` or \`limiter\`; got ${describeValue(options)}`);
  }
  assertKnownOptions(options, [...LIMITER_OPTION_KEYS, ...HTTP_OPTION_KEYS, ...extraKeys]);
  options = ownOptions(options);
  checkOptions(HTTP_OPTIONS, options);
  const { mode: headerMode, legacy: alsoLegacy, openai: alsoOpenai } = resolveHeaderModes(options.headers);
  const ipv6Subnet = resolveIpv6Subnet(options.ipv6Subnet);
  const warnings = resolveWarnings(options.warnings);
  const omitted = resolveOmitHeaders(options.omitHeaders);
  const { identify, skip, plan: planOf } = options;
  const user = options.user ?? defaultUser;
  const refunds = resolveRefunds(options);
  const settle = resolveSettle(options, refunds);
  if (settle !== undefined && role !== 'limit') throw new ConfigError('settle', "is rateLimit()'s option: a slowDown() never reserves");
  const requestLimits = resolveRequestLimits<Req>(options.limits, options.plan, options.logger);
  // A reservation is settled under the rules it was checked under: a plan's, an override's; not a request's own.
  if (settle !== undefined && requestLimits !== undefined)
    throw new ConfigError('settle', 'cannot be combined with a limit that is a function of the request (use plans or overrides)');
  const limiter = resolveLimiter(options, refunds, settle, requestLimits);
  // What its overrides' `ip:` identifiers may be: the IPv6 keys this middleware's checks hold.
  noteIpv6Keying(limiter, ipv6Subnet);
  // A request's limit is known per request: a cost that could never fit is refused then, by the check.
  if (requestLimits === undefined) checkCostFits(options.cost, limiter);
  checkOmittedUnits(omitted, headerMode === 'openai' || alsoOpenai, unitsOfLimiter(limiter));
  const logger = safeLogger(options.logger);
  const unidentified: UnidentifiedPolicy = options.unidentified ?? 'shared';
  if (planOf !== undefined && !(limiter.plans?.length > 0)) {
    throw new ConfigError('plan', 'needs `limits` that name plans, e.g. { free: [...], pro: [...] }');
  }
  const headers = new ResponseHeaders(limiter, headerMode, alsoLegacy, alsoOpenai, requestLimits !== undefined);
  const cost = options.cost ?? 1;
  const denials = new Denials<Req>(options.statusCode ?? 429, options.denyStatusCode ?? 403, options.message);
  const shadow = limiter.mode === 'shadow';
  const warn = (name: WarningName, text: string): void => logWarning(logger, warnings, name, text);
  // With `settle`, a request is counted by a reservation, settled once its response is over.
  const reserved = settle === undefined ? undefined : reservations(limiter, settle, warn);
  // Whether an admitted request's outcome carries `own`, for completed() after its response.
  const after = refunds.option !== undefined || reserved !== undefined;
  // A limiter from createLimiter() can answer a cached denial synchronously; any other `limiter` only by
  // check(), a wrapper of one (a Proxy, an object inheriting from it) included: its check() is its own policy.
  const direct = FloodgateLimiter.isOwn(limiter);
  // The lists' pre-check, through the object given (it only ever refuses), when it carries a limiter's lists.
  const listed = typeof (limiter as Partial<FloodgateLimiter>)[listCheck] === 'function';

  function shape(req: Req, decision: Decision, previous: Decision | undefined, planName?: string): MaybePromise<HttpOutcome> {
    if (decision.reason === 'listed') return denials.listed(req, decision);
    if (!decision.allowed && decision.reason === 'store-unavailable') return denials.unavailable(decision);
    // No counts to report: a failure-policy or local decision, or the allow list's (an allowed client gets no headers).
    const unknowable =
      decision.states.length === 0 && (decision.source === 'fallback' || decision.source === 'local' || decision.source === 'list');
    const quiet = shadow || decision.shadowDenied === true || unknowable;
    const { set, append } = quiet ? { set: [], append: [] } : headers.of(req as object, planName, decision, previous);
    // slowDown: a request over the count is delayed, not refused (the other denials stand).
    if (role === 'slow' && (decision.allowed || decision.reason === 'limit'))
      return { action: 'next', status: 200, set, append, self: decision, own: after ? decision : undefined };
    if (!decision.allowed) return denials.denial(req, decision, retryAfterSeconds(decision.retryAfterMs), set, append);
    const tightest = previous === undefined || bindsTighter(decision, previous) ? decision : previous;
    if (!after) return { action: 'next', status: 200, set, append, decision: tightest };
    return { action: 'next', status: 200, set, append, decision: tightest, own: decision };
  }

  function check(
    ids: string[],
    units: Cost,
    address: string | undefined,
    name: string | undefined,
    ruleSet?: RuleSetHandle,
  ): MaybePromise<Decision> {
    if (reserved !== undefined) return reserved.reserve(ids, units, name, address);
    return direct
      ? (limiter as FloodgateLimiter)[checkNow](ids, units, name, address, ruleSet)
      : limiter.check(ids, name === undefined ? { cost: units } : { cost: units, plan: name });
  }

  function limit(
    req: Req,
    ids: string[],
    units: Cost,
    previous: Decision | undefined,
    address: string | undefined,
    name?: string,
    ruleSet?: RuleSetHandle,
  ): MaybePromise<HttpOutcome> {
    if (name !== undefined && typeof name !== 'string') {
      throw new TypeError(`floodgate: plan(req) must return a plan name or undefined; got ${describeValue(name)}`);
    }
    const decision = isPaired(limiter)
      ? takeOver(req as object, limiter, role, ids, units, name, () => check(ids, units, address, name, ruleSet))
      : check(ids, units, address, name, ruleSet);
    if (!isThenable(decision)) return shape(req, decision, previous, name);
    return Promise.resolve(decision).then((d) => shape(req, d, previous, name));
  }

  function planned(
    req: Req,
    ids: string[],
    units: Cost,
    previous: Decision | undefined,
    address: string | undefined,
  ): MaybePromise<HttpOutcome> {
    if (requestLimits !== undefined) {
      // The limiter is this middleware's own (a function limit cannot stand beside a shared one): direct.
      const ruleSet = requestLimits.planOf(limiter as FloodgateLimiter, req);
      if (!isThenable(ruleSet)) return limit(req, ids, units, previous, address, undefined, ruleSet);
      return Promise.resolve(ruleSet).then((r) => limit(req, ids, units, previous, address, undefined, r));
    }
    if (planOf === undefined) return limit(req, ids, units, previous, address);
    const name = planOf(req);
    if (!isThenable(name)) return limit(req, ids, units, previous, address, name);
    return Promise.resolve(name).then((n) => limit(req, ids, units, previous, address, n));
  }

  function identified(
    req: Req,
    found: string[],
    defaults: string[],
    previous: Decision | undefined,
    address: string | undefined,
  ): MaybePromise<HttpOutcome> {
    let ids = found;
    if (ids.length === 0) {
      // identify() gave nothing usable (a missing API-key header, say): never unlimited for that.
      warn(
        'identify-empty',
        'identify() returned no usable identifier for a request (not a non-empty string or array of them); the default identifiers were used',
      );
      ids = defaults;
    }
    if (ids.includes(UNKNOWN_IP)) {
      if (unidentified === 'deny')
        return shape(req, localDenial('unidentified', UNKNOWN_IP, 1000, typeof cost === 'number' ? cost : 1), previous);
      if (unidentified === 'allow') {
        ids = ids.filter((id) => id !== UNKNOWN_IP);
        if (ids.length === 0) {
          warn(
            'no-identifier',
            "a request had no usable IP and nothing else identified it; it was let through unlimited (unidentified: 'allow')",
          );
          return NOTHING;
        }
      }
    }
    const units = typeof cost === 'function' ? cost(req) : cost;
    if (!isThenable(units)) return planned(req, ids, units, previous, address);
    return Promise.resolve(units).then((u) => planned(req, ids, u, previous, address));
  }

  /** The client's exact address for the lists' IP rules (not its /56 group), only when a list has IP rules. */
  const addressOf = (ip: string | undefined): string | undefined =>
    listed && (limiter as FloodgateLimiter)[currentLists].hasIps ? normaliseIp(ip, false) : undefined;

  function unskipped(req: Req, ip: string | undefined, previous: Decision | undefined): MaybePromise<HttpOutcome> {
    const defaults = defaultIdentifiers({ ip, user: user?.(req) }, ipv6Subnet);
    const address = addressOf(ip);
    if (defaults[0] === UNKNOWN_IP && !warned('unknown-ip')) {
      const what =
        typeof ip === 'string' && ip.length > 0
          ? `${describeValue(ip)}, which is not an IP address`
          : 'no address (a connection reset before it was read, or a unix socket)';
      warn(
        'unknown-ip',
        `a request's client address was ${what}; it is limited as '${UNKNOWN_IP}' (option unidentified: '${unidentified}')`,
      );
    }
    if (identify === undefined) return identified(req, defaults, defaults, previous, address);
    const found = identify(req, defaults);
    if (!isThenable(found)) return identified(req, identifiersFrom(found), defaults, previous, address);
    return Promise.resolve(found).then((f) => identified(req, identifiersFrom(f), defaults, previous, address));
  }

  /**
   * The deny list, before any option function runs: the client address and the default identifiers (IP,
   * user) are refused before skip, identify, cost or plan (a skipped route is no way around it). Identifiers
   * only identify() gives are matched with the check itself.
   */
  function refusedByList(req: Req, ip: string | undefined): MaybePromise<HttpOutcome> | undefined {
    // Shadow mode refuses nothing: the check reports the would-be denial, once.
    if (!listed || shadow || !(limiter as FloodgateLimiter)[currentLists].denies) return undefined;
    const defaults = defaultIdentifiers({ ip, user: user?.(req) }, ipv6Subnet);
    const decision = (limiter as FloodgateLimiter)[listCheck](defaults, addressOf(ip), typeof cost === 'number' ? cost : 1, true);
    return decision === undefined ? undefined : shape(req, decision, undefined);
  }

  function start(req: Req, ip: string | undefined, previous: Decision | undefined): MaybePromise<HttpOutcome> {
    const refused = refusedByList(req, ip);
    if (refused !== undefined) return refused;
    if (skip === undefined) return unskipped(req, ip, previous);
    const skipped = skip(req);
    if (!isThenable(skipped)) return skipped ? NOTHING : unskipped(req, ip, previous);
    return Promise.resolve(skipped).then((s) => (s ? NOTHING : unskipped(req, ip, previous)));
  }

  const failed = (error: unknown): HttpOutcome => failedOutcome(error);
  // A limiter whose responses set work off (refunds, settle) counts each check while it runs (completion.ts,
  // settled()): its promise's one callback pair ends the count, so no promise is added for it.
  const answered: ((outcome: HttpOutcome) => HttpOutcome) | undefined = after ? ended : undefined;
  const broke = after ? (error: unknown): HttpOutcome => ended(failed(error)) : failed;

  function decide(req: Req, ip: string | undefined, previous?: Decision): MaybePromise<HttpOutcome> {
    if (after) begin();
    try {
      let outcome = start(req, ip, previous);
      if (omitted !== undefined)
        outcome = isThenable(outcome) ? outcome.then((o) => omitHeaders(o, omitted)) : omitHeaders(outcome, omitted);
      if (isThenable(outcome)) return outcome.then(answered, broke);
      if (after) end();
      return outcome;
    } catch (error) {
      return broke(error);
    }
  }

  const refund = refunder(limiter, refunds, warn);
  // Through the object given, as the lists are, when it carries a limiter's store.
  const whole = typeof (limiter as Partial<FloodgateLimiter>)[keepWhole] === 'function';
  return {
    limiter,
    warn,
    decide,
    keepWhole: whole ? () => (limiter as FloodgateLimiter)[keepWhole]() : () => undefined,
    completed:
      reserved === undefined
        ? refund
        : (outcome, _finished, _status, args) => {
            if (outcome.own !== undefined) void reserved.completed(outcome.own, args);
          },
    run: async (req, ip, previous) => decide(req, ip, previous),
  };
}
