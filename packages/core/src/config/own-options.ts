import { closestName } from '../kernel/closest-name';
import { ConfigError } from '../kernel/errors';

/*
 * How every options object is read: its own properties only, and a name Floodgate does not know is a
 * ConfigError that says what was meant (a peer's option, or the closest name).
 */

/**
 * An options object's own enumerable properties, on a null prototype. Every option is read through this,
 * so a polluted `Object.prototype` (`Object.prototype.mode = 'shadow'`) can never switch an option on:
 * a property the caller did not write is absent.
 */
export function ownOptions<T extends object>(value: T): T {
  return Object.assign(Object.create(null) as T, value);
}

/** What the options of express-rate-limit, rate-limiter-flexible and @fastify/rate-limit are called here. */
const PEER_NAMES: Record<string, string> = {
  windowMs: "`limits: [{ limit, window }]` (window takes ms or '1m')",
  max: '`limits: [{ limit, window }]`',
  limit: '`limits: [{ limit, window }]`',
  window: '`limits: [{ limit, window }]`',
  points: '`limits: [{ limit, window }]`',
  duration: "`limits: [{ limit, window }]` (window takes ms or '1m')",
  timeWindow: "`limits: [{ limit, window }]` (window takes ms or '1m')",
  keyGenerator: '`identify(req, defaults)`',
  keyPrefix: '`prefix`',
  storeClient: '`redis` (a Redis client: ioredis, node-redis or Valkey GLIDE)',
  store: '`redis` (a Redis client: ioredis, node-redis or Valkey GLIDE)',
  client: '`redis` (a Redis client: ioredis, node-redis or Valkey GLIDE)',
  blockDuration: '`limiter.block(identifier, { duration })`',
  insuranceLimiter: "`failure: 'local'`",
  skipOnError: "`failure: 'open'`",
  passOnStoreError: "`failure: 'open'`",
  standardHeaders: "`headers: 'draft-8' | 'draft-7' | 'draft-6' | 'legacy' | false`",
  legacyHeaders: "`headers: 'legacy'`",
  addHeaders: '`headers` (which set) and `omitHeaders` (leave some out)',
  addHeadersOnExceeding: '`headers` (which set) and `omitHeaders` (leave some out)',
  enableDraftSpec: "`headers: 'draft-8'`",
  keyPrefixSeparator: '`prefix`',
  whitelist: '`allow: [...]` (IP addresses, CIDR ranges, identifiers), or `skip(req)` for a function',
  allowList: '`allow: [...]` (IP addresses, CIDR ranges, identifiers), or `skip(req)` for a function',
  blacklist: '`deny: [...]` (IP addresses, CIDR ranges, identifiers)',
  errorResponseBuilder: '`message` or `handler`',
};

/**
 * Throws on option names that are not in `known`, with what Floodgate calls a peer's option, or the
 * closest name. `path` names the enclosing option for nested objects ('blockCache.').
 */
export function assertKnownOptions(input: object, known: readonly string[], path = ''): void {
  for (const key of Object.keys(input)) {
    if (known.includes(key)) continue;
    const peer = path === '' && Object.hasOwn(PEER_NAMES, key) ? PEER_NAMES[key] : undefined;
    if (peer) throw new ConfigError(key, `is not a Floodgate option: Floodgate calls it ${peer}`);
    const close = closestName(key, known);
    throw new ConfigError(
      `${path}${key}`,
      `is not a Floodgate option${close ? `; did you mean \`${close}\`?` : ''} (known: ${known.join(', ')})`,
    );
  }
}
