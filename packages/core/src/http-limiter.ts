import { ConfigError, describeValue } from './errors';
import type { Decision } from './decision';
import { bindsTighter, defaultDenyMessage, errorBody, planHeaders, rateLimitHeaders, resolveHeaderMode, retryAfterSeconds, UNAVAILABLE_MESSAGE, type HeaderList, type HeaderMode, type HeaderPlan } from './http';
import { defaultIdentifiers, identifiersFrom, resolveIpv6Subnet } from './identity';
import { checkNow, createLimiter, type FloodgateLimiter, type Limiter } from './limiter';
import { LIMITER_OPTION_KEYS, assertKnownOptions, type LimiterOptions, type Logger } from './options';
import { resolveWarnings, warnOnce, type WarningName, type WarningsOption } from './warnings';

type MaybePromise<T> = T | Promise<T>;

/** Whether a user function gave a promise (or any thenable) rather than a value. */
function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/** Options every adapter takes, besides the core limiter options (or `limiter`). `Req` is the framework's request. */
export interface HttpOptions<Req> extends Partial<LimiterOptions> {
  /** Share an existing limiter instead of creating one (then leave the core options out). */
  limiter?: Limiter;
  /** Identifiers for this request: a string replaces the defaults; an array is the whole list (spread `defaults` to extend). */
  identify?: (req: Req, defaults: string[]) => MaybePromise<string | readonly string[]>;
  /** The user id of a request (a string or finite number; 0 counts). */
  user?: (req: Req) => unknown;
  /** true: not limited, no headers. */
  skip?: (req: Req) => MaybePromise<boolean>;
  /** Units a request consumes: a non-negative integer or a function of the request. Default 1. */
  cost?: number | ((req: Req) => MaybePromise<number>);
  headers?: HeaderMode;
  /** Status of a denial. Default 429. */
  statusCode?: number;
  /** The denial's message (in the default body), a whole JSON body (object), or a function giving either. */
  message?: string | object | ((req: Req, decision: Decision) => MaybePromise<string | object>);
  /** IPv6 addresses are grouped by this prefix length (32..64) or not at all (false). Default 56. */
  ipv6Subnet?: number | false;
  warnings?: WarningsOption;
}

export const HTTP_OPTION_KEYS = ['limiter', 'identify', 'user', 'skip', 'cost', 'headers', 'statusCode', 'message', 'ipv6Subnet', 'warnings'] as const;

/** What the adapter does: pass on, answer with `status` and `body`, or hand `error` to the framework. */
export interface HttpOutcome {
  action: 'next' | 'deny' | 'error';
  status: number;
  /** Headers with one value (overwrite). */
  set: HeaderList;
  /** List headers that several limiters on one response add to. */
  append: HeaderList;
  body?: object;
  /** `body` as JSON when Floodgate made it (the default or a string `message`), for adapters that send it as is. */
  json?: string;
  /** The tightest decision of the limiters that ran on this request so far (for req.rateLimit). */
  decision?: Decision;
  error?: unknown;
}

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
}

const UNAVAILABLE_JSON = JSON.stringify(errorBody(503, UNAVAILABLE_MESSAGE));
const NOTHING: HttpOutcome = Object.freeze({ action: 'next', status: 200, set: [], append: [] }) as HttpOutcome;

function fnOption<T>(value: unknown, option: string): T | undefined {
  if (value === undefined || typeof value === 'function') return value as T | undefined;
  throw new ConfigError(option, `must be a function; got ${describeValue(value)}`);
}

function resolveLimiter<Req>(options: HttpOptions<Req>): Limiter {
  if (options.limiter === undefined) {
    const core: Record<string, unknown> = {};
    for (const key of LIMITER_OPTION_KEYS) if (options[key] !== undefined) core[key] = options[key];
    return createLimiter(core as unknown as LimiterOptions);
  }
  const shared = options.limiter;
  if (typeof shared !== 'object' || shared === null || typeof shared.check !== 'function') {
    throw new ConfigError('limiter', `must be a limiter from createLimiter(); got ${describeValue(shared)}`);
  }
  for (const key of LIMITER_OPTION_KEYS) {
    if (key !== 'logger' && options[key] !== undefined) throw new ConfigError(key, 'cannot be combined with `limiter`: set it on the shared limiter');
  }
  return shared;
}

function resolveStatic(options: HttpOptions<unknown>, limiter: Limiter): void {
  const { cost, statusCode } = options;
  if (typeof cost === 'number') {
    if (!Number.isInteger(cost) || cost < 0) throw new ConfigError('cost', `must be a non-negative integer or a function; got ${describeValue(cost)}`);
    // A static cost above an unscoped rule's capacity could never pass: say so now, not on every request.
    const capacity = Math.min(...limiter.rules.filter((r) => r.for === undefined).map((r) => Math.max(r.limit, r.burst)));
    if (cost > capacity) throw new ConfigError('cost', `${cost} exceeds the capacity ${capacity} of a rule, so no request could ever pass`);
  } else fnOption(cost, 'cost');
  if (statusCode !== undefined && (!Number.isInteger(statusCode) || statusCode < 400 || statusCode > 599)) {
    throw new ConfigError('statusCode', `must be an integer HTTP error status (400-599); got ${describeValue(statusCode)}`);
  }
  const message = options.message;
  if (message !== undefined && typeof message !== 'string' && typeof message !== 'function' && (typeof message !== 'object' || message === null)) {
    throw new ConfigError('message', `must be a string, an object or a function; got ${describeValue(message)}`);
  }
}

/**
 * Validates an adapter's options once and returns what every request needs: the shared request -> outcome
 * logic, so adapters only read the request and write the outcome. `extraKeys` are the adapter's own options.
 */
export function createHttpLimiter<Req>(options: HttpOptions<Req>, extraKeys: readonly string[] = [], defaultUser?: (req: Req) => unknown): HttpLimiter<Req> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('options', `must be an object with \`limits\` or \`limiter\`; got ${describeValue(options)}`);
  }
  assertKnownOptions(options, [...LIMITER_OPTION_KEYS, ...HTTP_OPTION_KEYS, ...extraKeys]);
  const headerMode = resolveHeaderMode(options.headers);
  const ipv6Subnet = resolveIpv6Subnet(options.ipv6Subnet);
  const warnings = resolveWarnings(options.warnings);
  const identify = fnOption<HttpOptions<Req>['identify']>(options.identify, 'identify');
  const user = fnOption<(req: Req) => unknown>(options.user, 'user') ?? defaultUser;
  const skip = fnOption<HttpOptions<Req>['skip']>(options.skip, 'skip');
  const limiter = resolveLimiter(options);
  resolveStatic(options as HttpOptions<unknown>, limiter);
  const logger: Logger = options.logger ?? { warn: (m) => process.emitWarning(m, { code: 'FLOODGATE' }) };
  const plan: HeaderPlan = planHeaders(limiter, headerMode);
  const cost = options.cost ?? 1;
  const statusCode = options.statusCode ?? 429;
  const message = options.message;
  const shadow = limiter.mode === 'shadow';
  const warn = (name: WarningName, text: string): void => warnOnce(logger, warnings, name, text);
  // A limiter from createLimiter() can answer a cached denial synchronously; any other `limiter` only by check().
  const direct = typeof (limiter as Partial<FloodgateLimiter>)[checkNow] === 'function';

  // The last default or string body as JSON: a client that stays denied gets the same text for a second.
  let lastText: string | undefined;
  let lastJson = '';

  function denied(custom: unknown, retryS: number, set: HeaderList, append: HeaderList, decision: Decision): HttpOutcome {
    // A fresh body object each time: the framework (Koa's ctx.body) may hand it to code that changes it.
    if (typeof custom === 'object' && custom !== null) return { action: 'deny', status: statusCode, set, append, body: custom, decision };
    const text = typeof custom === 'string' ? custom : defaultDenyMessage(retryS);
    const body = errorBody(statusCode, text);
    if (text !== lastText) {
      lastText = text;
      lastJson = JSON.stringify(body);
    }
    return { action: 'deny', status: statusCode, set, append, body, json: lastJson, decision };
  }

  function denial(req: Req, decision: Decision, retryS: number, set: HeaderList, append: HeaderList): MaybePromise<HttpOutcome> {
    set.push(['Retry-After', String(retryS)]);
    const custom = typeof message === 'function' ? message(req, decision) : message;
    if (!isThenable(custom)) return denied(custom, retryS, set, append, decision);
    return Promise.resolve(custom).then((c) => denied(c, retryS, set, append, decision));
  }

  function shape(req: Req, decision: Decision, previous: Decision | undefined): MaybePromise<HttpOutcome> {
    const retryS = retryAfterSeconds(decision.retryAfterMs);
    if (!decision.allowed && decision.reason === 'store-unavailable') {
      // failure 'closed': the store could not decide, so no counts to report and no driver text to leak.
      return { action: 'deny', status: 503, set: [['Retry-After', String(retryS)]], append: [], body: errorBody(503, UNAVAILABLE_MESSAGE), json: UNAVAILABLE_JSON, decision };
    }
    const unknowable = decision.source === 'fallback' && decision.states.length === 0;
    const quiet = shadow || decision.shadowDenied === true || unknowable;
    const { set, append } = quiet ? { set: [], append: [] } : rateLimitHeaders(plan, decision, previous, plan.mode === 'legacy' ? Date.now() : 0);
    if (!decision.allowed) return denial(req, decision, retryS, set, append);
    const tightest = previous === undefined || bindsTighter(decision, previous) ? decision : previous;
    return { action: 'next', status: 200, set, append, decision: tightest };
  }

  /*
   * The steps of a request, each taking what the one before produced. A step that gets a promise (an async
   * skip, identify, cost or message, or a decision the block cache cannot give) continues when it settles;
   * everything else runs synchronously, so a client the block cache already denies costs no promise.
   */
  function limit(req: Req, ids: string[], units: number, previous: Decision | undefined): MaybePromise<HttpOutcome> {
    const decision = direct ? (limiter as FloodgateLimiter)[checkNow](ids, units) : limiter.check(ids, { cost: units });
    if (!isThenable(decision)) return shape(req, decision, previous);
    return Promise.resolve(decision).then((d) => shape(req, d, previous));
  }

  function identified(req: Req, ids: string[], previous: Decision | undefined): MaybePromise<HttpOutcome> {
    if (ids.length === 0) {
      warn('no-identifier', 'a request had no IP, no user and no identifier from identify(); it was let through unlimited');
      return NOTHING;
    }
    const units = typeof cost === 'function' ? cost(req) : cost;
    if (!isThenable(units)) return limit(req, ids, units, previous);
    return Promise.resolve(units).then((u) => limit(req, ids, u, previous));
  }

  function unskipped(req: Req, ip: string | undefined, previous: Decision | undefined): MaybePromise<HttpOutcome> {
    const defaults = defaultIdentifiers({ ip, user: user?.(req) }, ipv6Subnet);
    if (identify === undefined) return identified(req, defaults, previous);
    const found = identify(req, defaults);
    if (!isThenable(found)) return identified(req, identifiersFrom(found), previous);
    return Promise.resolve(found).then((f) => identified(req, identifiersFrom(f), previous));
  }

  function start(req: Req, ip: string | undefined, previous: Decision | undefined): MaybePromise<HttpOutcome> {
    if (skip === undefined) return unskipped(req, ip, previous);
    const skipped = skip(req);
    if (!isThenable(skipped)) return skipped ? NOTHING : unskipped(req, ip, previous);
    return Promise.resolve(skipped).then((s) => (s ? NOTHING : unskipped(req, ip, previous)));
  }

  const failed = (error: unknown): HttpOutcome => ({ action: 'error', status: 500, set: [], append: [], error });

  function decide(req: Req, ip: string | undefined, previous?: Decision): MaybePromise<HttpOutcome> {
    try {
      const outcome = start(req, ip, previous);
      return isThenable(outcome) ? outcome.then(undefined, failed) : outcome;
    } catch (error) {
      return failed(error);
    }
  }

  return {
    limiter,
    warn,
    decide,
    run: async (req, ip, previous) => decide(req, ip, previous),
  };
}
