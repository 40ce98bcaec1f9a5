import { ConfigError, describeValue } from '../kernel/errors';
import type { Decision } from '../kernel/decision';
import { resolveWarnings, type WarningsOption } from '../kernel/warnings';
import { inheritedNames, optionNames, type OptionTable } from '../config/option-table';
import { checkBoolean, checkErrorStatus, checkFunction, oneOfCheck } from '../config/validate';
import { unitOf, type Rule } from '../config/rules';
import { ALGORITHMS, type AlgorithmName } from '../scripts/algorithms';
import type { Cost, Limiter } from '../engine/limiter';
import { LIMITER_OPTIONS, type LimiterOptions } from '../engine/options';
import { resolveHeaderModes, type HeadersOption } from './headers';
import { resolveOmitHeaders, type OmittableHeader } from './header-filter';
import { resolveIpv6Subnet } from './identity';
import type { MaybePromise } from './option-types';
import type { HttpRuleInput } from './request-limits';

/*
 * The options every adapter's rateLimit() takes besides the core limiter's, declared once: the interface
 * (what an application writes, with each option's TSDoc) and its table (config/option-table.ts).
 */

export type UnidentifiedPolicy = 'shared' | 'deny' | 'allow';

/**
 * `limits` in the adapters: as createLimiter() takes them, or one rule set whose rules' `limit` may be a
 * function of the request (`{ limit: (req) => (req.user?.premium ? 1000 : 100), window: '1m' }`,
 * docs/overrides.md): each distinct answer is a rule set compiled at its first use, at most 256.
 */
export type HttpLimits<Req> = LimiterOptions['limits'] | HttpRuleInput<Req> | HttpRuleInput<Req>[];

/** Options every adapter takes, besides the core limiter options (or `limiter`). `Req` is the framework's request. */
export interface HttpOptions<Req> extends Partial<Omit<LimiterOptions, 'limits'>> {
  /**
   * The rules: one, a list, or named plans of them (`{ free: [...], pro: [...] }`), one of which each
   * request picks (`plan`). Without plans, a rule's `limit` may be a function of the request.
   */
  limits?: HttpLimits<Req>;
  /** Share an existing limiter instead of creating one (then leave the core options out). */
  limiter?: Limiter;
  /** Identifiers for this request: a string replaces the defaults; an array is the whole list (spread `defaults` to extend). */
  identify?: (req: Req, defaults: string[]) => MaybePromise<string | readonly string[]>;
  /** The user id of a request (a string or finite number; 0 counts). */
  user?: (req: Req) => unknown;
  /** true: not limited, no headers. */
  skip?: (req: Req) => MaybePromise<boolean>;
  /**
   * Units a request consumes: a non-negative integer (every rule's), a cost per unit the rules count
   * (`{ requests: 1, tokens: 4096 }`, docs/budgets.md), or a function of the request giving either. Default
   * 1. With `settle`, the estimate counted when the request is admitted. A function's invalid answer is an
   * error the framework's error handling gets: never a cost of 0.
   */
  cost?: Cost | ((req: Req) => MaybePromise<Cost>);
  /**
   * The actual cost of an admitted request, once its response is over (sent in full, or the client left
   * while it streamed): the request is then counted with `limiter.reserve()` at `cost` (the estimate), and
   * this answer settles it (less gives back, more charges past the limit). Arguments as `requestWasSuccessful`
   * gets them: Express (req, res), Fastify (request, reply), Koa (ctx), Hono (c). Needs `refunds: true` on a
   * shared `limiter` (an own limiter is made so). One that throws or answers an invalid cost keeps the
   * estimate counted. docs/budgets.md, "In an HTTP app".
   */
  settle?(req: Req, ...rest: unknown[]): MaybePromise<Cost>;
  /**
   * Which plan of `limits: { free: [...], pro: [...] }` applies to a request (undefined: the first). A
   * name the limiter does not have is an error the framework's error handling gets (next(err)).
   */
  plan?: (req: Req) => MaybePromise<string | undefined>;
  /** Which rate-limit headers: a draft, 'legacy', 'openai', false, or a draft with 'legacy' and/or 'openai' (`['draft-8', 'openai']`). Default 'draft-8'. */
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

const UNIDENTIFIED: readonly UnidentifiedPolicy[] = ['shared', 'deny', 'allow'];

const isCount = (value: unknown): boolean => typeof value === 'number' && Number.isInteger(value) && value >= 0;

function checkCost(value: unknown, option: string): void {
  if (typeof value === 'function') return;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [unit, n] of Object.entries(value)) {
      if (!isCount(n)) throw new ConfigError(`${option}.${unit}`, `must be a non-negative integer; got ${describeValue(n)}`);
    }
    return;
  }
  if (!isCount(value)) {
    throw new ConfigError(
      option,
      `must be a non-negative integer, a cost per unit ({ requests: 1, tokens: 1200 }) or a function; got ${describeValue(value)}`,
    );
  }
}

function checkMessage(value: unknown, option: string): void {
  if (typeof value !== 'string' && typeof value !== 'function' && (typeof value !== 'object' || value === null)) {
    throw new ConfigError(option, `must be a string, an object or a function; got ${describeValue(value)}`);
  }
}

/** The HTTP layer's own options (besides the core limiter's), declared once. */
export const HTTP_OPTIONS: OptionTable<Omit<HttpOptions<unknown>, keyof LimiterOptions>> = {
  limiter: {},
  identify: { check: checkFunction },
  user: { check: checkFunction, inherited: true },
  skip: { check: checkFunction },
  cost: { check: checkCost },
  plan: { check: checkFunction },
  settle: { check: checkFunction },
  headers: { check: resolveHeaderModes, inherited: true },
  statusCode: { check: checkErrorStatus, inherited: true },
  denyStatusCode: { check: checkErrorStatus, inherited: true },
  message: { check: checkMessage, inherited: true },
  ipv6Subnet: { check: resolveIpv6Subnet, inherited: true },
  unidentified: { check: oneOfCheck(UNIDENTIFIED) },
  skipSuccessfulRequests: { check: checkBoolean },
  skipFailedRequests: { check: checkBoolean },
  requestWasSuccessful: { check: checkFunction },
  warnings: { check: resolveWarnings, inherited: true },
  omitHeaders: { check: resolveOmitHeaders, inherited: true },
};

/** The names of the HTTP layer's own options, in declaration order. */
export const HTTP_OPTION_KEYS = optionNames(HTTP_OPTIONS);

/**
 * The options, core and HTTP, that a route's own limiter inherits from app-wide options unless it sets its
 * own (`inherited` in the tables): where and how state lives, and how answers look.
 */
export const INHERITED_OPTION_KEYS = inheritedNames(LIMITER_OPTIONS, HTTP_OPTIONS);

/**
 * `cost` against the limiter's rules: a static cost above an unscoped rule's capacity could never pass, so
 * it is refused now, not on every request. Capacity is the algorithm's: a token bucket holds `burst`,
 * whatever its limit. A cost per unit is held to each rule of its unit, and must name every unit of every
 * plan and no other (as a check reads it: never a unit silently read as 0).
 */
/** The rules of every plan of a limiter (its one rule set when it has no plans). */
export function rulesOfEveryPlan(limiter: Limiter): readonly Rule[] {
  return (limiter.plans?.length > 0 ? limiter.plans.map((p) => limiter.rulesOf(p)) : [limiter.rules]).flat();
}

/** The units a limiter's rules count, over every plan. */
export const unitsOfLimiter = (limiter: Limiter): ReadonlySet<string> => new Set(rulesOfEveryPlan(limiter).map(unitOf));

export function checkCostFits(cost: unknown, limiter: Limiter): void {
  if (typeof cost === 'function' || cost === undefined) return;
  const algorithm = ALGORITHMS[limiter.algorithm as AlgorithmName];
  const rules = rulesOfEveryPlan(limiter);
  const perUnit = typeof cost === 'object' && cost !== null ? (cost as Record<string, number>) : undefined;
  if (perUnit !== undefined) {
    const units = new Set(rules.map(unitOf));
    for (const unit of Object.keys(perUnit)) {
      if (!units.has(unit))
        throw new ConfigError(`cost.${unit}`, `names a unit no rule of the limiter counts (units: ${[...units].join(', ')})`);
    }
    for (const unit of units) {
      if (!Object.hasOwn(perUnit, unit))
        throw new ConfigError('cost', `leaves out the unit '${unit}', which rules count (give each: ${[...units].join(', ')})`);
    }
  }
  for (const rule of rules) {
    if (rule.for !== undefined) continue;
    const n = perUnit === undefined ? (cost as number) : perUnit[unitOf(rule)];
    const capacity = algorithm ? algorithm.capacity(rule) : rule.limit;
    if (n !== undefined && n > capacity) {
      const what = perUnit === undefined ? 'cost' : `cost.${unitOf(rule)}`;
      throw new ConfigError(what, `${n} exceeds the capacity ${capacity} of a rule, so no request could ever pass`);
    }
  }
}

/**
 * The limiter a middleware checks: its own, made by `make` from the core options among `options`, or the
 * shared `limiter` given (`isLimiter` tells one; `expected` names what it must be), beside which no core
 * option may stand: `logger` aside, which also carries the adapter's warnings.
 */
export function ownOrShared<L>(
  options: { limiter?: unknown } & Record<string, unknown>,
  coreKeys: readonly string[],
  make: (core: Record<string, unknown>) => L,
  isLimiter: (value: object) => boolean,
  expected: string,
): L {
  if (options.limiter === undefined) {
    const core: Record<string, unknown> = {};
    for (const key of coreKeys) if (options[key] !== undefined) core[key] = options[key];
    return make(core);
  }
  const shared = options.limiter;
  if (typeof shared !== 'object' || shared === null || !isLimiter(shared)) {
    throw new ConfigError('limiter', `must be a limiter from ${expected}; got ${describeValue(shared)}`);
  }
  for (const key of coreKeys) {
    if (key !== 'logger' && options[key] !== undefined)
      throw new ConfigError(key, 'cannot be combined with `limiter`: set it on the shared limiter');
  }
  return shared as L;
}
