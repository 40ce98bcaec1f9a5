import { ConfigError, describeValue } from '../kernel/errors';
import { localDenial, type Decision } from '../kernel/decision';
import {
  bindsTighter,
  defaultDenyMessage,
  errorBody,
  planHeaders,
  rateLimitHeaders,
  resolveHeaderModes,
  retryAfterSeconds,
  UNAVAILABLE_MESSAGE,
  type HeaderList,
  type HeaderMode,
  type HeaderPlan,
  type HeadersOption,
} from './headers';
import { defaultIdentifiers, identifiersFrom, normaliseIp, resolveIpv6Subnet } from './identity';
import { FloodgateLimiter, checkNow, createLimiter, currentLists, listCheck, type Limiter } from '../engine/limiter';
import { LIMITER_OPTION_KEYS, type LimiterOptions } from '../engine/options';
import { ALGORITHMS, type AlgorithmName } from '../scripts/algorithms';
import { resolveWarnings, warnOnce, warned, type WarningName, type WarningsOption } from '../kernel/warnings';
import { shared } from '../kernel/state';
import { omitHeaders, resolveOmitHeaders, type OmittableHeader } from './header-filter';
import type { MaybePromise } from './option-types';
import { UNKNOWN_IP } from '../scripts/keys';
import { assertKnownOptions, ownOptions } from '../config/own-options';
import { safeLogger } from '../kernel/logger';

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
  /**
   * Which plan of `limits: { free: [...], pro: [...] }` applies to a request (undefined: the first). A
   * name the limiter does not have is an error the framework's error handling gets (next(err)).
   */
  plan?: (req: Req) => MaybePromise<string | undefined>;
  /** Which rate-limit headers: a draft, 'legacy', false, or a draft and 'legacy' together (`['draft-8', 'legacy']`). Default 'draft-8'. */
  headers?: HeadersOption;
  /** Status of a denial. Default 429. */
  statusCode?: number;
  /** Status of a request the deny list refuses (docs/lists.md). Default 403. */
  denyStatusCode?: number;
  /** The denial's message (in the default body), a whole JSON body (object), or a function giving either. */
  message?: string | object | ((req: Req, decision: Decision) => MaybePromise<string | object>);
  /** IPv6 addresses are grouped by this prefix length (32..64) or not at all (false). Default 56. */
  ipv6Subnet?: number | false;
  /**
   * A request whose client address is unknown (the connection was reset before it could be read, a unix
   * socket, a proxy header that is not an IP) and that nothing else identifies: 'shared' (default) limits
   * every such request under one identifier, `ip:unknown`; 'deny' answers it with `statusCode` (reason
   * 'unidentified'); 'allow' lets it through unlimited (the only way a request goes unlimited for want of
   * an identity, so it must be asked for).
   */
  unidentified?: UnidentifiedPolicy;
  /** Give a request's units back when its response succeeded (status < 400, or requestWasSuccessful). */
  skipSuccessfulRequests?: boolean;
  /**
   * Give a request's units back when its response failed (status >= 400, or requestWasSuccessful). Only a
   * response the server finished counts: a request whose connection closed first stays counted.
   */
  skipFailedRequests?: boolean;
  /**
   * Whether a finished response succeeded, for the two options above. Express: (req, res); Koa: (ctx);
   * Fastify: (request, reply). Default: the status is below 400. Not asked for a response that never
   * finished (the connection closed first): that request stays counted either way.
   */
  requestWasSuccessful?(req: Req, ...rest: unknown[]): MaybePromise<boolean>;
  warnings?: WarningsOption;
  /** Headers this limiter never writes, such as `['Retry-After']` or `['RateLimit-Policy']` (case-insensitive). */
  omitHeaders?: readonly (OmittableHeader | Lowercase<OmittableHeader>)[];
}

export type UnidentifiedPolicy = 'shared' | 'deny' | 'allow';

export const HTTP_OPTION_KEYS = [
  'limiter',
  'identify',
  'user',
  'skip',
  'cost',
  'plan',
  'headers',
  'statusCode',
  'denyStatusCode',
  'message',
  'ipv6Subnet',
  'unidentified',
  'skipSuccessfulRequests',
  'skipFailedRequests',
  'requestWasSuccessful',
  'warnings',
  'omitHeaders',
] as const;

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
  /**
   * This limiter's own admitted decision, when its options give units back after the response: the
   * adapter then calls `completed()` once the response is done (see whenResponseDone).
   */
  own?: Decision;
  /** slowDown only: this limiter's own decision, from which the delay is computed (http-slow-down.ts). */
  self?: Decision;
  error?: unknown;
}

/**
 * What a limiter of the HTTP layer does with a decision: `limit` (rateLimit) refuses a denied request;
 * `slow` (slowDown) lets a request over the count through, to be delayed, and refuses only for the other
 * reasons (deny list, block, failure 'closed', unidentified 'deny').
 */
export type HttpRole = 'limit' | 'slow';

/** A decision one middleware made for a request, that a middleware of the other role on the same limiter takes over. */
interface Made {
  limiter: Limiter;
  role: HttpRole;
  key: string;
  decision: Decision | Promise<Decision>;
}

/** Limiters that a slowDown shares with rateLimit: only their checks are recorded and looked up per request. */
const paired = shared('pairedLimiters', () => new WeakSet<Limiter>());
/** Per request: the decisions of paired limiters, until the other middleware takes them over (once). */
const made = shared('madeDecisions', () => new WeakMap<object, Made[]>());

/** Marks a limiter as shared by a slowDown: a request then counts once for slowDown and rateLimit together. */
export function pairLimiter(limiter: Limiter): void {
  paired.add(limiter);
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
  /**
   * After the response of a request whose outcome has `own`: gives its units back when the refund options
   * say so. `finished`: the response was sent in full; when false (the connection closed first, whoever
   * closed it) nothing is given back. `status` its status; `args` what requestWasSuccessful takes in this
   * framework. Never throws; a refund the store cannot take is a warning (the units stay counted: never
   * more admissions).
   */
  completed(outcome: HttpOutcome, finished: boolean, status: number, args: readonly unknown[]): void;
}

/**
 * A plan's headers: in this limiter's mode, (draft modes) in each draft another limiter may have chosen, and
 * (`headers: [draft, 'legacy']`) the legacy headers beside the draft.
 */
interface HeaderPlans {
  own: HeaderPlan;
  drafts: Record<Draft, HeaderPlan> | undefined;
  legacy: HeaderPlan | undefined;
}

const UNAVAILABLE_JSON = JSON.stringify(errorBody(503, UNAVAILABLE_MESSAGE));

type Draft = 'draft-6' | 'draft-7' | 'draft-8';
const isDraft = (mode: HeaderMode): mode is Draft => mode === 'draft-6' || mode === 'draft-7' || mode === 'draft-8';
/**
 * Per request (Express req, Fastify request, Koa ctx): the draft the first limiter with headers wrote, in a
 * property under a registered symbol (every copy of this package finds it). A property rather than a
 * WeakMap entry: a WeakMap.set on every request was ~20% of a cached denial's cost in the adapter layer.
 * A request object that takes no property (frozen) keeps it in the WeakMap.
 */
const DIALECT = Symbol.for('@floodgate/core.headerDialect');
const dialects = shared('headerDialects', () => new WeakMap<object, Draft>());
type Dialected = { [DIALECT]?: Draft };
const dialectOf = (req: object): Draft | undefined => (req as Dialected)[DIALECT] ?? dialects.get(req);
function setDialect(req: object, draft: Draft): void {
  if (Object.isExtensible(req)) (req as Dialected)[DIALECT] = draft;
  else dialects.set(req, draft);
}

export function resolveUnidentified(value: unknown): UnidentifiedPolicy {
  if (value === undefined) return 'shared';
  if (value === 'shared' || value === 'deny' || value === 'allow') return value;
  throw new ConfigError('unidentified', `must be 'shared', 'deny' or 'allow'; got ${describeValue(value)}`);
}
const NOTHING: HttpOutcome = Object.freeze({ action: 'next', status: 200, set: [], append: [] }) as HttpOutcome;

export function fnOption<T>(value: unknown, option: string): T | undefined {
  if (value === undefined || typeof value === 'function') return value as T | undefined;
  throw new ConfigError(option, `must be a function; got ${describeValue(value)}`);
}

interface RefundOptions {
  successful: boolean;
  failed: boolean;
  wasSuccessful: ((...args: unknown[]) => MaybePromise<boolean>) | undefined;
  /** The option that asked for refunds, for messages; undefined when none did. */
  option: string | undefined;
}

function resolveRefunds(options: HttpOptions<unknown>): RefundOptions {
  for (const key of ['skipSuccessfulRequests', 'skipFailedRequests'] as const) {
    const value = options[key];
    if (value !== undefined && typeof value !== 'boolean') throw new ConfigError(key, `must be true or false; got ${describeValue(value)}`);
  }
  const successful = options.skipSuccessfulRequests === true;
  const failed = options.skipFailedRequests === true;
  const wasSuccessful = fnOption<RefundOptions['wasSuccessful']>(options.requestWasSuccessful, 'requestWasSuccessful');
  if (wasSuccessful !== undefined && !successful && !failed) {
    throw new ConfigError('requestWasSuccessful', 'does nothing without skipSuccessfulRequests or skipFailedRequests');
  }
  const option = successful ? 'skipSuccessfulRequests' : failed ? 'skipFailedRequests' : undefined;
  return { successful, failed, wasSuccessful, option };
}

function resolveLimiter<Req>(options: HttpOptions<Req>, refunds: RefundOptions): Limiter {
  if (options.limiter === undefined) {
    const core: Record<string, unknown> = {};
    for (const key of LIMITER_OPTION_KEYS) if (options[key] !== undefined) core[key] = options[key];
    // Giving units back needs the refundable script: this limiter's own, so it is made so.
    if (refunds.option !== undefined) core.refunds = true;
    return createLimiter(core as unknown as LimiterOptions);
  }
  const shared = options.limiter;
  if (typeof shared !== 'object' || shared === null || typeof shared.check !== 'function') {
    throw new ConfigError('limiter', `must be a limiter from createLimiter(); got ${describeValue(shared)}`);
  }
  for (const key of LIMITER_OPTION_KEYS) {
    if (key !== 'logger' && options[key] !== undefined)
      throw new ConfigError(key, 'cannot be combined with `limiter`: set it on the shared limiter');
  }
  if (refunds.option !== undefined && shared.refunds !== true) {
    throw new ConfigError(refunds.option, 'needs a shared limiter made with `refunds: true` (createLimiter({ ..., refunds: true }))');
  }
  return shared;
}

/** An HTTP error status option: an integer from 400 to 599. */
function errorStatus(value: unknown, option: string): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 400 || value > 599)) {
    throw new ConfigError(option, `must be an integer HTTP error status (400-599); got ${describeValue(value)}`);
  }
}

export function resolveStatic(options: HttpOptions<unknown>, limiter: Limiter): void {
  const { cost } = options;
  if (typeof cost === 'number') {
    if (!Number.isInteger(cost) || cost < 0)
      throw new ConfigError('cost', `must be a non-negative integer or a function; got ${describeValue(cost)}`);
    // A static cost above an unscoped rule's capacity could never pass: say so now, not on every request.
    // Capacity is the algorithm's: a token bucket holds `burst`, whatever its limit.
    const algorithm = ALGORITHMS[limiter.algorithm as AlgorithmName];
    const plans = limiter.plans?.length > 0 ? limiter.plans.map((p) => limiter.rulesOf(p)) : [limiter.rules];
    const capacity = Math.min(
      ...plans
        .flat()
        .filter((r) => r.for === undefined)
        .map((r) => (algorithm ? algorithm.capacity(r) : r.limit)),
    );
    if (cost > capacity) throw new ConfigError('cost', `${cost} exceeds the capacity ${capacity} of a rule, so no request could ever pass`);
  } else fnOption(cost, 'cost');
  errorStatus(options.statusCode, 'statusCode');
  errorStatus(options.denyStatusCode, 'denyStatusCode');
  const message = options.message;
  if (
    message !== undefined &&
    typeof message !== 'string' &&
    typeof message !== 'function' &&
    (typeof message !== 'object' || message === null)
  ) {
    throw new ConfigError('message', `must be a string, an object or a function; got ${describeValue(message)}`);
  }
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
  const { mode: headerMode, legacy: alsoLegacy } = resolveHeaderModes(options.headers);
  const ipv6Subnet = resolveIpv6Subnet(options.ipv6Subnet);
  const warnings = resolveWarnings(options.warnings);
  const omitted = resolveOmitHeaders(options.omitHeaders);
  const identify = fnOption<HttpOptions<Req>['identify']>(options.identify, 'identify');
  const user = fnOption<(req: Req) => unknown>(options.user, 'user') ?? defaultUser;
  const skip = fnOption<HttpOptions<Req>['skip']>(options.skip, 'skip');
  const planOf = fnOption<HttpOptions<Req>['plan']>(options.plan, 'plan');
  const refunds = resolveRefunds(options as HttpOptions<unknown>);
  const limiter = resolveLimiter(options, refunds);
  resolveStatic(options as HttpOptions<unknown>, limiter);
  const logger = safeLogger(options.logger);
  const unidentified = resolveUnidentified(options.unidentified);
  if (planOf !== undefined && !(limiter.plans?.length > 0)) {
    throw new ConfigError('plan', 'needs `limits` that name plans, e.g. { free: [...], pro: [...] }');
  }
  const headers = new Map<string | undefined, HeaderPlans>();
  for (const name of [undefined, ...(limiter.plans ?? [])]) {
    const rules = name === undefined ? limiter.rules : limiter.rulesOf(name);
    const of = (mode: HeaderMode): HeaderPlan => planHeaders({ name: limiter.name, rules }, mode);
    // Another limiter may already have written draft headers on a response: this one then writes in that
    // draft, so the two never overwrite each other's items or mix two syntaxes in one header.
    const drafts = isDraft(headerMode) ? { 'draft-6': of('draft-6'), 'draft-7': of('draft-7'), 'draft-8': of('draft-8') } : undefined;
    headers.set(name, { own: of(headerMode), drafts, legacy: alsoLegacy ? of('legacy') : undefined });
  }
  const plan = headers.get(undefined)!.own;
  const cost = options.cost ?? 1;
  const statusCode = options.statusCode ?? 429;
  const denyStatusCode = options.denyStatusCode ?? 403;
  const message = options.message;
  const shadow = limiter.mode === 'shadow';
  const warn = (name: WarningName, text: string): void => warnOnce(logger, warnings, name, text);
  // A limiter from createLimiter() can answer a cached denial synchronously; any other `limiter` only by
  // check(), a wrapper of one (a Proxy, an object inheriting from it) included: its check() is its own policy.
  const direct = FloodgateLimiter.isOwn(limiter);
  // The lists' pre-check, through the object given (it only ever refuses), when it carries a limiter's lists.
  const listed = typeof (limiter as Partial<FloodgateLimiter>)[listCheck] === 'function';

  // The last default or string body as JSON: a client that stays denied gets the same text for a second.
  let lastText: string | undefined;
  let lastJson = '';
  let lastRetryS = -1;
  let lastDefault = '';

  function denied(custom: unknown, retryS: number, set: HeaderList, append: HeaderList, decision: Decision): HttpOutcome {
    // A fresh body object each time: the framework (Koa's ctx.body) may hand it to code that changes it,
    // and a later middleware's edit must not reach the next client's denial.
    if (typeof custom === 'object' && custom !== null)
      return { action: 'deny', status: statusCode, set, append, body: structuredClone(custom), decision };
    if (typeof custom !== 'string' && retryS !== lastRetryS) {
      lastRetryS = retryS;
      lastDefault = defaultDenyMessage(retryS);
    }
    const text = typeof custom === 'string' ? custom : lastDefault;
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

  function listedBody(custom: unknown, decision: Decision): HttpOutcome {
    const body =
      typeof custom === 'object' && custom !== null
        ? structuredClone(custom)
        : errorBody(denyStatusCode, typeof custom === 'string' ? custom : 'Forbidden');
    return { action: 'deny', status: denyStatusCode, set: [], append: [], body, decision };
  }

  /** The deny list refused the request: `denyStatusCode`, no rate-limit headers, no Retry-After (waiting changes nothing). */
  function listedDenial(req: Req, decision: Decision): MaybePromise<HttpOutcome> {
    // Only a message function applies (it sees reason 'listed'): a string or object message is about the limit.
    const custom = typeof message === 'function' ? message(req, decision) : undefined;
    if (!isThenable(custom)) return listedBody(custom, decision);
    return Promise.resolve(custom).then((c) => listedBody(c, decision));
  }

  function shape(req: Req, decision: Decision, previous: Decision | undefined, planName?: string): MaybePromise<HttpOutcome> {
    if (decision.reason === 'listed') return listedDenial(req, decision);
    const retryS = retryAfterSeconds(decision.retryAfterMs);
    if (!decision.allowed && decision.reason === 'store-unavailable') {
      // failure 'closed': the store could not decide, so no counts to report and no driver text to leak.
      return {
        action: 'deny',
        status: 503,
        set: [['Retry-After', String(retryS)]],
        append: [],
        body: errorBody(503, UNAVAILABLE_MESSAGE),
        json: UNAVAILABLE_JSON,
        decision,
      };
    }
    // No counts to report: a failure-policy or local decision, or the allow list's (an allowed client gets no headers).
    const unknowable =
      decision.states.length === 0 && (decision.source === 'fallback' || decision.source === 'local' || decision.source === 'list');
    const quiet = shadow || decision.shadowDenied === true || unknowable;
    const { set, append } = quiet ? { set: [], append: [] } : headersOf(req, planName, decision, previous);
    // slowDown: a request over the count is delayed, not refused (the other denials stand).
    if (role === 'slow' && (decision.allowed || decision.reason === 'limit'))
      return { action: 'next', status: 200, set, append, self: decision, own: refunds.option === undefined ? undefined : decision };
    if (!decision.allowed) return denial(req, decision, retryS, set, append);
    const tightest = previous === undefined || bindsTighter(decision, previous) ? decision : previous;
    if (refunds.option === undefined) return { action: 'next', status: 200, set, append, decision: tightest };
    return { action: 'next', status: 200, set, append, decision: tightest, own: decision };
  }

  /*
   * The steps of a request, each taking what the one before produced. A step that gets a promise (an async
   * skip, identify, cost or message, or a decision the block cache cannot give) continues when it settles;
   * everything else runs synchronously, so a client the block cache already denies costs no promise.
   */
  function limit(
    req: Req,
    ids: string[],
    units: number,
    previous: Decision | undefined,
    address: string | undefined,
    name?: string,
  ): MaybePromise<HttpOutcome> {
    if (name !== undefined && typeof name !== 'string') {
      throw new TypeError(`floodgate: plan(req) must return a plan name or undefined; got ${describeValue(name)}`);
    }
    const decision = paired.has(limiter) ? takeOver(req, ids, units, address, name) : check(ids, units, address, name);
    if (!isThenable(decision)) return shape(req, decision, previous, name);
    return Promise.resolve(decision).then((d) => shape(req, d, previous, name));
  }

  function check(ids: string[], units: number, address: string | undefined, name: string | undefined): MaybePromise<Decision> {
    return direct
      ? (limiter as FloodgateLimiter)[checkNow](ids, units, name, address)
      : limiter.check(ids, name === undefined ? { cost: units } : { cost: units, plan: name });
  }

  /**
   * A limiter shared by slowDown and rateLimit: the first of the two to check a request records its
   * decision, and the other takes it over instead of counting the request again (same identifiers, cost
   * and plan; once).
   */
  function takeOver(req: Req, ids: string[], units: number, address: string | undefined, name: string | undefined): MaybePromise<Decision> {
    const key = `${name ?? ''}\n${units}\n${ids.join('\n')}`;
    const list = made.get(req as object);
    const at = list === undefined ? -1 : list.findIndex((m) => m.limiter === limiter && m.role !== role && m.key === key);
    if (at !== -1) return list!.splice(at, 1)[0]!.decision;
    const decision = check(ids, units, address, name);
    const entry: Made = { limiter, role, key, decision };
    if (list === undefined) made.set(req as object, [entry]);
    else list.push(entry);
    return decision;
  }

  function planned(
    req: Req,
    ids: string[],
    units: number,
    previous: Decision | undefined,
    address: string | undefined,
  ): MaybePromise<HttpOutcome> {
    if (planOf === undefined) return limit(req, ids, units, previous, address);
    const name = planOf(req);
    if (!isThenable(name)) return limit(req, ids, units, previous, address, name);
    return Promise.resolve(name).then((n) => limit(req, ids, units, previous, address, n));
  }

  /** The header plan for this request: its plan's, in the draft another limiter already wrote, if one did. */
  function planFor(req: Req, plans: HeaderPlans): HeaderPlan {
    const { own, drafts } = plans;
    if (drafts === undefined) return own;
    const used = dialectOf(req as object);
    if (used === undefined) {
      setDialect(req as object, headerMode as Draft);
      return own;
    }
    return drafts[used];
  }

  /** A decision's rate-limit headers: in the request's draft (or this limiter's mode), and the legacy ones beside it when asked. */
  function headersOf(
    req: Req,
    name: string | undefined,
    decision: Decision,
    previous: Decision | undefined,
  ): { set: HeaderList; append: HeaderList } {
    const plans = headers.get(name) ?? headers.get(undefined)!;
    const out = rateLimitHeaders(planFor(req, plans), decision, previous, plan.mode === 'legacy' ? Date.now() : 0);
    if (plans.legacy !== undefined) out.set.push(...rateLimitHeaders(plans.legacy, decision, previous, Date.now()).set);
    return out;
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

  // A function option that throws a non-error (undefined, a string) must still fail the request: an adapter
  // handing `next(undefined)` or `next('route')` to the framework would let it through unlimited.
  const failed = (error: unknown): HttpOutcome => ({
    action: 'error',
    status: 500,
    set: [],
    append: [],
    error:
      error instanceof Error
        ? error
        : new Error(`floodgate: an option function threw a non-error: ${describeValue(error)}`, { cause: error }),
  });

  function decide(req: Req, ip: string | undefined, previous?: Decision): MaybePromise<HttpOutcome> {
    try {
      let outcome = start(req, ip, previous);
      if (omitted !== undefined)
        outcome = isThenable(outcome) ? outcome.then((o) => omitHeaders(o, omitted)) : omitHeaders(outcome, omitted);
      return isThenable(outcome) ? outcome.then(undefined, failed) : outcome;
    } catch (error) {
      return failed(error);
    }
  }

  const refund = (decision: Decision): void => {
    limiter
      .refund(decision)
      .then(undefined, (error: unknown) =>
        warn(
          'refund-failed',
          `a refund could not reach the store (${error instanceof Error ? error.message : describeValue(error)}); those units stay counted until their window passes`,
        ),
      );
  };

  function completed(outcome: HttpOutcome, finished: boolean, status: number, args: readonly unknown[]): void {
    const own = outcome.own;
    // Only an outcome the server produced is judged. A connection that closed before the response finished
    // (during the check, a slowDown delay, the handler or the write) is the client's choice as often as
    // not: a reset while the handler works would buy back the work it did. It stays counted
    // (docs/refunds.md, where this differs from express-rate-limit).
    if (own === undefined || !finished) return;
    const give = (succeeded: boolean): void => {
      if (succeeded ? refunds.successful : refunds.failed) refund(own);
    };
    if (refunds.wasSuccessful === undefined) return give(status < 400);
    const judged = (error: unknown): void =>
      warn(
        'refund-failed',
        `requestWasSuccessful threw (${error instanceof Error ? error.message : describeValue(error)}); the request stays counted`,
      );
    try {
      const verdict = refunds.wasSuccessful(...args);
      if (isThenable(verdict)) Promise.resolve(verdict).then((v) => give(v === true), judged);
      else give(verdict === true);
    } catch (error) {
      judged(error);
    }
  }

  return {
    limiter,
    warn,
    decide,
    completed,
    run: async (req, ip, previous) => decide(req, ip, previous),
  };
}
