import { ConfigError, describeValue } from '../kernel/errors';
import { UNAVAILABLE_MESSAGE, errorBody, retryAfterSeconds, type HeaderList } from './headers';
import { HTTP_OPTIONS, ownOrShared, type HttpOptions, type UnidentifiedPolicy } from './options';
import { defaultIdentifiers, identifiersFrom, resolveIpv6Subnet } from './identity';
import { resolveWarnings, logWarning, type WarningName, type WarningsOption } from '../kernel/warnings';
import { createConcurrencyLimiter, type ConcurrencyLimiter, type Lease } from '../engine/concurrency/limiter';
import { CONCURRENCY_OPTION_KEYS, type ConcurrencyLimiterOptions } from '../engine/concurrency/options';
import type { MaybePromise } from './option-types';
import { endOf, type ResponseLike } from './node';
import { begin, end, track } from './completion';
import { UNKNOWN_IP } from '../scripts/keys';
import { assertKnownOptions, ownOptions } from '../config/own-options';
import { checkOptions, optionNames, type OptionTable } from '../config/option-table';
import { safeLogger } from '../kernel/logger';

/** Options of every adapter's `concurrency()`, besides the core options (or `limiter`). `Req` is the framework's request. */
export interface ConcurrencyHttpOptions<Req> extends Partial<ConcurrencyLimiterOptions> {
  /** Share a limiter from createConcurrencyLimiter() (then leave the core options out). */
  limiter?: ConcurrencyLimiter;
  identify?: HttpOptions<Req>['identify'];
  user?: HttpOptions<Req>['user'];
  skip?: HttpOptions<Req>['skip'];
  /** Status of a denial. Default 429. */
  statusCode?: number;
  /** The denial's message (in the default body), a whole JSON body (object), or a function giving either. */
  message?: string | object | ((req: Req, lease: Lease) => MaybePromise<string | object>);
  ipv6Subnet?: number | false;
  unidentified?: UnidentifiedPolicy;
  warnings?: WarningsOption;
}

/** concurrency()'s options besides the concurrency limiter's, declared once: each checked as rateLimit's is. */
const CONCURRENCY_HTTP_OPTIONS: OptionTable<Omit<ConcurrencyHttpOptions<unknown>, keyof ConcurrencyLimiterOptions>> = {
  limiter: {},
  identify: HTTP_OPTIONS.identify,
  user: HTTP_OPTIONS.user,
  skip: HTTP_OPTIONS.skip,
  statusCode: HTTP_OPTIONS.statusCode,
  message: HTTP_OPTIONS.message,
  ipv6Subnet: HTTP_OPTIONS.ipv6Subnet,
  unidentified: HTTP_OPTIONS.unidentified,
  warnings: HTTP_OPTIONS.warnings,
};
export const CONCURRENCY_HTTP_OPTION_KEYS = optionNames(CONCURRENCY_HTTP_OPTIONS);

/**
 * What the adapter does: pass on (`next`), answer with `status`, `set` and `body` (`deny`), hand `error`
 * to the framework, or nothing at all (`gone`: the client left before its lease was granted; the lease is
 * already released and the request must not reach a handler).
 */
export interface ConcurrencyOutcome {
  action: 'next' | 'deny' | 'error' | 'gone';
  status: number;
  set: HeaderList;
  body?: object;
  /** `body` as JSON when Floodgate made it, for adapters that send it as is. */
  json?: string;
  lease?: Lease;
  error?: unknown;
}

export interface HttpConcurrency<Req> {
  readonly limiter: ConcurrencyLimiter;
  /**
   * Decides one request. A granted lease is tied to `res`: released once, when the response finishes or the
   * connection closes, whichever comes first. Never rejects: errors are the `error` outcome.
   */
  enter(req: Req, ip: string | undefined, res: ResponseLike): Promise<ConcurrencyOutcome>;
  warn(name: WarningName, message: string): void;
}

const NEXT: ConcurrencyOutcome = Object.freeze({ action: 'next', status: 200, set: [] }) as ConcurrencyOutcome;
const GONE: ConcurrencyOutcome = Object.freeze({ action: 'gone', status: 499, set: [] }) as ConcurrencyOutcome;
const UNAVAILABLE_JSON = JSON.stringify(errorBody(503, UNAVAILABLE_MESSAGE));
const UNIDENTIFIED: Lease = Object.freeze({
  granted: false,
  source: 'local',
  reason: 'unidentified',
  identifier: UNKNOWN_IP,
  max: 0,
  inFlight: 0,
  retryAfterMs: 1000,
  release: () => Promise.resolve(false),
});

export function defaultConcurrencyMessage(retryAfterS: number): string {
  return `Too many requests in progress, retry in ${retryAfterS} second${retryAfterS === 1 ? '' : 's'}`;
}

/**
 * Validates an adapter's `concurrency()` options once and returns what every request needs. `extraKeys`
 * are the adapter's own options; `defaultUser` reads the framework's authenticated user id.
 */
export function createHttpConcurrency<Req>(
  options: ConcurrencyHttpOptions<Req>,
  extraKeys: readonly string[] = [],
  defaultUser?: (req: Req) => unknown,
): HttpConcurrency<Req> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('options', `must be an object with \`max\` or \`limiter\`; got ${describeValue(options)}`);
  }
  assertKnownOptions(options, [...CONCURRENCY_OPTION_KEYS, ...CONCURRENCY_HTTP_OPTION_KEYS, ...extraKeys]);
  options = ownOptions(options);
  checkOptions(CONCURRENCY_HTTP_OPTIONS, options);
  const ipv6Subnet = resolveIpv6Subnet(options.ipv6Subnet);
  const warnings = resolveWarnings(options.warnings);
  const { identify, skip } = options;
  const user = options.user ?? defaultUser;
  const unidentified: UnidentifiedPolicy = options.unidentified ?? 'shared';
  const limiter = ownOrShared<ConcurrencyLimiter>(
    options as ConcurrencyHttpOptions<Req> & Record<string, unknown>,
    CONCURRENCY_OPTION_KEYS,
    (core) => createConcurrencyLimiter(core as unknown as ConcurrencyLimiterOptions),
    (shared) => typeof (shared as Partial<ConcurrencyLimiter>).lease === 'function',
    'createConcurrencyLimiter()',
  );
  const logger = safeLogger(options.logger);
  const statusCode = options.statusCode ?? 429;
  const message = options.message;
  const warn = (name: WarningName, text: string): void => logWarning(logger, warnings, name, text);

  /** The request's identifiers; undefined when it is not limited (skipped, or unidentified: 'allow' with nothing left). */
  async function identifiers(req: Req, ip: string | undefined): Promise<string[] | undefined> {
    if (skip !== undefined && (await skip(req))) return undefined;
    const defaults = defaultIdentifiers({ ip, user: user?.(req) }, ipv6Subnet);
    if (defaults[0] === UNKNOWN_IP)
      warn('unknown-ip', `a request's client address was unknown or not an IP; its concurrency is limited as '${UNKNOWN_IP}'`);
    let ids = identify === undefined ? defaults : identifiersFrom(await identify(req, defaults));
    if (ids.length === 0) {
      warn('identify-empty', 'identify() returned no usable identifier for a request; the default identifiers were used');
      ids = defaults;
    }
    if (unidentified === 'allow' && ids.includes(UNKNOWN_IP)) {
      ids = ids.filter((id) => id !== UNKNOWN_IP);
      if (ids.length === 0)
        warn('no-identifier', "a request had no usable identifier; its concurrency was not limited (unidentified: 'allow')");
    }
    return ids.length === 0 ? undefined : ids;
  }

  async function denial(req: Req, lease: Lease): Promise<ConcurrencyOutcome> {
    const retryS = retryAfterSeconds(lease.retryAfterMs);
    const set: HeaderList = [['Retry-After', String(retryS)]];
    if (lease.reason === 'store-unavailable') {
      return { action: 'deny', status: 503, set, body: errorBody(503, UNAVAILABLE_MESSAGE), json: UNAVAILABLE_JSON, lease };
    }
    const custom = typeof message === 'function' ? await message(req, lease) : message;
    if (typeof custom === 'object' && custom !== null)
      return { action: 'deny', status: statusCode, set, body: structuredClone(custom), lease };
    const body = errorBody(statusCode, typeof custom === 'string' ? custom : defaultConcurrencyMessage(retryS));
    return { action: 'deny', status: statusCode, set, body, json: JSON.stringify(body), lease };
  }

  async function enter(req: Req, ip: string | undefined, res: ResponseLike): Promise<ConcurrencyOutcome> {
    try {
      const hold = endOf(res);
      const ids = await identifiers(req, ip);
      if (ids === undefined) return NEXT;
      if (unidentified === 'deny' && ids.includes(UNKNOWN_IP)) return await denial(req, UNIDENTIFIED);
      // Counted while it is acquired (settled()): the client may leave meanwhile, and its release follows.
      begin();
      try {
        const lease = await limiter.lease(ids);
        if (!lease.granted) return await denial(req, lease);
        // Each release is counted until the store has answered. A client that left while its lease was
        // acquired: nothing will end its response, so it is released now.
        if (!hold(() => track(lease.release()))) {
          track(lease.release());
          return GONE;
        }
        return { action: 'next', status: 200, set: [], lease };
      } finally {
        end();
      }
    } catch (error) {
      // A function option that throws a non-error must still fail the request (see http-limiter.ts).
      const err = error instanceof Error ? error : new Error(`floodgate: an option function threw a non-error: ${describeValue(error)}`);
      return { action: 'error', status: 500, set: [], error: err };
    }
  }

  return { limiter, enter, warn };
}
