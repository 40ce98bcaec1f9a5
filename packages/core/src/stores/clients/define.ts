import { ConfigError, describeValue } from '../../kernel/errors';
import { isNoScript } from './script';
import type { ClientAdapter } from './types';

/**
 * Another Redis client, wrapped for Floodgate with defineClient(): three calls and, optionally, whether it
 * is connected. See docs/clients.md for a complete wrapper.
 */
export interface ScriptClient {
  /** EVALSHA sha numkeys ...keys ...args; on a Cluster, on the master of keys[0]'s slot. A missing script must reject with an error whose message contains NOSCRIPT. */
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  /** EVAL script numkeys ...keys ...args, routed the same way. Floodgate sends it after a NOSCRIPT. */
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** DEL key (one key; on a Cluster, on its slot's master). */
  del(key: string): Promise<unknown>;
  /** Whether the client talks to a Redis Cluster (Floodgate then never sends a script over keys of two slots). Default false. */
  isCluster?: boolean;
  /**
   * Whether a command sent now goes straight to the server. Return false while the client is reconnecting:
   * Floodgate then applies the failure policy instead of queueing a check. Default: always ready.
   */
  isReady?(): boolean;
}

/** The mark defineClient() sets, read by the seam (index.ts) to recognise a wrapped client. */
export const WRAPPED = Symbol.for('@floodgate/core.client');

/** Marks a ScriptClient as one: `createLimiter({ redis: defineClient({ evalsha, eval, del }) })`. */
export function defineClient<T extends ScriptClient>(client: T): T {
  if (typeof client !== 'object' || client === null)
    throw new ConfigError('redis', `defineClient() takes an object; got ${describeValue(client)}`);
  for (const m of ['evalsha', 'eval', 'del'] as const) {
    if (typeof client[m] !== 'function')
      throw new ConfigError('redis', `defineClient() needs a ${m}() method; got ${describeValue(client[m])}`);
  }
  Object.defineProperty(client, WRAPPED, { value: true });
  return client;
}

/**
 * A wrapped client's call as a promise: its synchronous throw becomes a rejection. Stores send from places
 * where a throw would escape every caller (a batch at the end of the turn, a give-back, the records' side
 * write), and every other adapter's library only ever rejects.
 */
function promised<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (err) {
    return Promise.reject(err);
  }
}

export function customAdapter(c: ScriptClient): ClientAdapter {
  return {
    library: 'custom',
    target: c,
    isCluster: c.isCluster === true,
    readiness: () => (c.isReady === undefined || c.isReady() ? 'ready' : { down: 'the Redis client is not ready' }),
    onFirstReady: (done) => done(),
    evalScript(script, keys, argv) {
      const a = argv.map(String);
      return promised(() => c.evalsha(script.sha, keys, a)).catch((err: unknown) => {
        if (!isNoScript(err)) throw err;
        return promised(() => c.eval(script.lua, keys, a));
      });
    },
    del: (key) => promised(() => c.del(key)),
    coalesce: () => undefined,
    infoMemory: () => [],
  };
}
