import { ConfigError, describeValue } from '../../kernel/errors';
import type { Logger } from '../../kernel/logger';
import { shared } from '../../kernel/state';
import { WRAPPED, customAdapter, type ScriptClient } from './define';
import { glideAdapter, type GlideLike } from './glide';
import { ioredisAdapter, type IoredisLike } from './ioredis';
import { nodeRedisAdapter, type NodeRedisLike } from './node-redis';
import { isFn, type ClientAdapter } from './types';

/*
 * The client seam (docs/clients.md): the one place that knows which Redis client library the application
 * handed to Floodgate. Everything a store does on Redis goes through a ClientAdapter: a script call (EVALSHA,
 * EVAL after NOSCRIPT, on the master of its first key's slot on a Cluster), a DEL, whether a command may be
 * sent now (readiness) and INFO memory for the eviction check. Readiness, the deadline, the breaker, the
 * script cache and the slot grouping stay in RedisStore and ClusterStore, the same for every client.
 *
 * Clients are recognised by what they do (their methods and properties), never by their constructor's name:
 *   - ioredis and iovalkey `Redis` / `Cluster`: defineCommand() and a string `status` (`isCluster` on a Cluster);
 *   - node-redis (the `redis` package, v5+) createClient() / createCluster(): sendCommand(), evalSha(), and
 *     boolean `isOpen` / `isReady` (a cluster also has getNodeClientForKey());
 *   - Valkey GLIDE GlideClient / GlideClusterClient: customCommand() and invokeScript() (a cluster client
 *     also has fcallWithRoute());
 *   - anything else wrapped with defineClient({ evalsha, eval, del }).
 *
 * This file is the seam other modules import: detection, adapterOf() and the checks on a `redis` option. Each
 * library's adapter has a file of its own (ioredis.ts, node-redis.ts, glide.ts, define.ts); what they share
 * is in types.ts and script.ts.
 */

export type { ClientAdapter, Readiness, Script } from './types';
export { SCRIPT_PRELUDE, scriptOf } from './script';
export { defineClient, type ScriptClient } from './define';
export type { IoredisLike } from './ioredis';
export type { NodeRedisLike } from './node-redis';
export type { GlideLike } from './glide';

type Loose = Record<string | symbol, unknown>;

/** Which library a value is a client of, by its shape; undefined when none. */
function detect(value: unknown): ((c: never) => ClientAdapter) | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Loose;
  if (v[WRAPPED] === true) return customAdapter;
  if (isFn(v.defineCommand) && typeof v.status === 'string' && isFn(v.once)) return ioredisAdapter;
  if (isFn(v.sendCommand) && isFn(v.evalSha) && typeof v.isOpen === 'boolean' && typeof v.isReady === 'boolean') return nodeRedisAdapter;
  if (isFn(v.customCommand) && isFn(v.invokeScript)) return glideAdapter;
  return undefined;
}

export const SUPPORTED_CLIENTS =
  'an ioredis or iovalkey Redis or Cluster, a node-redis (`redis` v5+) client from createClient() or createCluster(), ' +
  'or a Valkey GLIDE GlideClient or GlideClusterClient';

/** Throws the ConfigError for a `redis` option that is no client Floodgate can use. */
export function assertClient(value: unknown, option = 'redis'): void {
  if (typeof value === 'string') {
    throw new ConfigError(
      option,
      `must be a Redis client, not a URL: pass \`new Redis(url)\` (ioredis) or another client (${SUPPORTED_CLIENTS})`,
    );
  }
  if (detect(value) === undefined) {
    throw new ConfigError(
      option,
      `must be ${SUPPORTED_CLIENTS}; got ${describeValue(value)}. Any other client can be wrapped: ` +
        '`defineClient({ evalsha(sha, keys, args), eval(script, keys, args), del(key) })` from @floodgate/core (docs/clients.md)',
    );
  }
}

/**
 * A Redis client Floodgate can use (the `redis` option): the shapes it recognises, typed structurally so that
 * no client library is a dependency of @floodgate/core.
 */
export type RedisClient = IoredisLike | NodeRedisLike | GlideLike | ScriptClient;

const adapters = shared('clientAdapters', () => new WeakMap<object, ClientAdapter>());

/**
 * Warns when the client gives up on a request before the limiter's deadline (Valkey GLIDE's requestTimeout,
 * default 250 ms): its timeouts, not Floodgate's deadline, would then decide (docs/clients.md).
 */
export function checkRequestTimeout(client: ClientAdapter, timeoutMs: number, logger: Logger): void {
  const own = client.requestTimeoutMs;
  if (own === undefined || own > timeoutMs) return;
  logger.warn(
    `floodgate: the Valkey GLIDE client's requestTimeout (${own} ms) is not above the limiter's timeoutMs (${timeoutMs} ms): ` +
      "GLIDE's own timeouts would cut checks short. Create the client with a larger requestTimeout (docs/clients.md)",
  );
}

/** The adapter of a client (one per client object in a process, shared by every store on it). */
export function adapterOf(client: object): ClientAdapter {
  let a = adapters.get(client);
  if (a === undefined) {
    const make = detect(client);
    if (make === undefined) assertClient(client);
    a = make!(client as never);
    adapters.set(client, a);
  }
  return a;
}
