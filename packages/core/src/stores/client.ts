import { createHash } from 'node:crypto';
import { ConfigError, StoreError, describeValue } from '../kernel/errors';
import { shared } from '../kernel/state';
import { coalesceWrites, type Flush } from './coalesce';
import type { Logger } from '../kernel/logger';

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
 */

/** A script as a store sends it: its text and SHA1. */
export interface Script {
  readonly lua: string;
  readonly sha: string;
  /** floodgate_<kind>_<sha prefix>: the ioredis command name (two Floodgate versions in a process never clash). */
  readonly name: string;
}

const scripts = shared('scripts', () => new Map<string, Script>());

/**
 * The first line of every script Floodgate sends. The scripts read TIME and then write; Redis before 5.0
 * (and 5.0-6.x started with `lua-replicate-commands no`) refuses a write after TIME unless the script has
 * switched to effects replication, which this does. From Redis 7.0 (and in Valkey) effects replication is the
 * only kind and the call is a deprecated no-op returning true; should a server drop the function, the guard
 * skips it.
 */
export const SCRIPT_PRELUDE = 'if redis.replicate_commands then redis.replicate_commands() end\n';

/** The Script of `lua` (one object per text in a process), as sent: with SCRIPT_PRELUDE first. */
export function scriptOf(kind: string, lua: string): Script {
  let s = scripts.get(lua);
  if (s === undefined) {
    const text = SCRIPT_PRELUDE + lua;
    const sha = createHash('sha1').update(text).digest('hex');
    s = { lua: text, sha, name: `floodgate_${kind}_${sha.slice(0, 10)}` };
    scripts.set(lua, s);
  }
  return s;
}

/**
 * Whether a command sent now goes straight to the server: 'ready'; 'first-connect' while the client has
 * never been ready yet and is connecting (a check waits for it, within its deadline); otherwise why not
 * (a command sent now would wait in the client's own queue, to run long after its caller gave up).
 */
export type Readiness = 'ready' | 'first-connect' | { down: string };

/** What a store uses of a Redis client, whichever library it comes from. */
export interface ClientAdapter {
  readonly library: 'ioredis' | 'node-redis' | 'glide' | 'custom';
  /** The application's client object: the breaker and the eviction check are per client. */
  readonly target: object;
  readonly isCluster: boolean;
  readiness(): Readiness;
  /** Calls `done` once, at the client's first 'ready' (no argument) or its first connection failure. */
  onFirstReady(done: (err?: unknown) => void): void;
  /**
   * The script over `keys` and `argv` (on a Cluster, on the master of keys[0]'s slot): EVALSHA, then EVAL
   * after a NOSCRIPT reply. A command not yet sent at `deadlineAt` (performance.now()) is never sent.
   */
  evalScript(script: Script, keys: string[], argv: (string | number)[], deadlineAt?: number): Promise<unknown>;
  del(key: string): Promise<unknown>;
  /** The write turn of the command just sent, when the client's socket can be corked (stores/coalesce.ts). */
  coalesce(): Flush | undefined;
  /** INFO memory of every master; a client that cannot ask answers []. */
  infoMemory(): Promise<string>[];
  /** Set by the store: where the adapter reports a hazard it meets at run time (once per client). */
  logger?: Logger;
  /** The client's own per-request timeout, when it has one (Valkey GLIDE's requestTimeout). */
  readonly requestTimeoutMs?: number;
}

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

const WRAPPED = Symbol.for('@floodgate/core.client');

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

type Fn = (...args: never[]) => unknown;
type Loose = Record<string | symbol, unknown>;

const isFn = (v: unknown): v is Fn => typeof v === 'function';

/** NOSCRIPT as ioredis and node-redis ("NOSCRIPT No matching script") and GLIDE ("NoScriptError: ...") word it. */
function isNoScript(err: unknown): boolean {
  return /NOSCRIPT|NoScriptError/.test(err instanceof Error ? err.message : String(err));
}

function args(script: string, keys: string[], argv: (string | number)[]): string[] {
  return [script, String(keys.length), ...keys, ...argv.map(String)];
}

/** EVALSHA, then EVAL on NOSCRIPT: what ioredis's defineCommand does, for the clients that lack it. */
function evalWithFallback(
  script: Script,
  keys: string[],
  argv: (string | number)[],
  send: (cmd: string[]) => Promise<unknown>,
): Promise<unknown> {
  return send(['EVALSHA', ...args(script.sha, keys, argv)]).catch((err: unknown) => {
    if (!isNoScript(err)) throw err;
    return send(['EVAL', ...args(script.lua, keys, argv)]);
  });
}

/** ioredis / iovalkey: the client's own defineCommand (EVALSHA, EVAL after NOSCRIPT), and its status. */
export interface IoredisLike {
  status: string;
  isCluster?: boolean;
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  del(...keys: string[]): Promise<number>;
  once(event: string, listener: (...a: unknown[]) => void): unknown;
  removeListener(event: string, listener: (...a: unknown[]) => void): unknown;
  connect?(): Promise<unknown>;
}

interface InfoNode {
  info?(section: string): Promise<string>;
  nodes?(role: string): InfoNode[];
}

const FIRST_CONNECT_STATES = new Set(['wait', 'connecting', 'connect']);

function ioredisAdapter(c: IoredisLike): ClientAdapter {
  type Command = (numKeys: number, ...a: (string | number)[]) => Promise<unknown>;
  const commands = new Map<Script, Command>();
  return {
    library: 'ioredis',
    target: c,
    isCluster: c.isCluster === true,
    readiness: () =>
      c.status === 'ready' ? 'ready' : FIRST_CONNECT_STATES.has(c.status) ? 'first-connect' : { down: `Redis connection is ${c.status}` },
    onFirstReady(done) {
      const finish = (err?: unknown): void => {
        c.removeListener('ready', onReady);
        c.removeListener('error', onError);
        c.removeListener('close', onError);
        done(err);
      };
      const onReady = (): void => finish();
      const onError = (err?: unknown): void => finish(err ?? new Error('connection closed'));
      c.once('ready', onReady);
      c.once('error', onError);
      c.once('close', onError);
      if (c.status === 'wait') c.connect?.().catch(() => undefined);
    },
    evalScript(script, keys, argv) {
      let cmd = commands.get(script);
      if (cmd === undefined) {
        const client = c as unknown as Record<string, Command | undefined>;
        if (typeof client[script.name] !== 'function') c.defineCommand(script.name, { lua: script.lua });
        cmd = (client[script.name] as Command).bind(c);
        commands.set(script, cmd);
      }
      return cmd(keys.length, ...keys, ...argv);
    },
    del: (key) => c.del(key),
    coalesce: () => coalesceWrites(c),
    infoMemory() {
      const n = c as InfoNode;
      return (c.isCluster && isFn(n.nodes) ? n.nodes('master') : [n]).flatMap((s) => (isFn(s.info) ? [s.info('memory')] : []));
    },
  };
}

/** node-redis v5+: explicit connect(), isOpen / isReady, and its own offline queue while reconnecting. */
export interface NodeRedisLike {
  isOpen: boolean;
  isReady: boolean;
  sendCommand(...a: unknown[]): Promise<unknown>;
  once?(event: string, listener: (...a: unknown[]) => void): unknown;
  removeListener?(event: string, listener: (...a: unknown[]) => void): unknown;
  info?(section: string): Promise<string>;
  masters?: unknown[];
  nodeClient?(node: unknown): Promise<{ info(section: string): Promise<string> }>;
  getNodeClientForKey?: unknown;
}

const NOT_CONNECTED =
  'the node-redis client is not connected: node-redis never connects by itself, so call `await client.connect()` ' +
  '(for a cluster, `await cluster.connect()`) before the first check (docs/clients.md)';

function nodeRedisAdapter(c: NodeRedisLike): ClientAdapter {
  const cluster = isFn(c.getNodeClientForKey);
  return {
    library: 'node-redis',
    target: c,
    isCluster: cluster,
    // Never connected: the limiter's warning quotes this, once while failing.
    readiness: () => (c.isReady ? 'ready' : c.isOpen ? 'first-connect' : { down: NOT_CONNECTED }),
    onFirstReady(done) {
      const finish = (err?: unknown): void => {
        c.removeListener?.('ready', onReady);
        c.removeListener?.('error', onError);
        c.removeListener?.('end', onError);
        done(err);
      };
      const onReady = (): void => finish();
      const onError = (err?: unknown): void => finish(err ?? new Error('connection closed'));
      c.once?.('ready', onReady);
      c.once?.('error', onError);
      c.once?.('end', onError);
    },
    evalScript: (script, keys, argv) =>
      evalWithFallback(script, keys, argv, (cmd) => (cluster ? c.sendCommand(keys[0], false, cmd) : c.sendCommand(cmd))),
    del: (key) => (cluster ? c.sendCommand(key, false, ['DEL', key]) : c.sendCommand(['DEL', key])),
    coalesce: () => undefined, // node-redis writes the commands of one tick together by itself
    infoMemory() {
      if (!cluster) return isFn(c.info) ? [c.info('memory')] : [];
      if (!Array.isArray(c.masters) || !isFn(c.nodeClient)) return [];
      return c.masters.map((m) => c.nodeClient!(m).then((n) => n.info('memory')));
    },
  };
}

/**
 * Valkey GLIDE: connected when created (it reconnects by itself), a request timeout and an in-flight limit of
 * its own. Only its public method is typed here: GLIDE's classes declare their settings private (or
 * protected), and an interface naming them would refuse a GlideClient at compile time.
 */
export interface GlideLike {
  customCommand(args: string[], options?: Record<string, unknown>): Promise<unknown>;
}

/** What the adapter reads of a GLIDE client at run time: members GLIDE's types keep private, or the cluster client's. */
interface GlideSettings {
  fcallWithRoute?: unknown;
  inflightRequestsLimit?: unknown;
  requestTimeout?: unknown;
  isClosed?: unknown;
}

/** GLIDE's Decoder.String: replies as strings whatever the client's defaultDecoder. */
const GLIDE_DECODER_STRING = 1;
const INFLIGHT_REFUSED = /maximum inflight requests/i;

function glideAdapter(client: GlideLike): ClientAdapter {
  const c = client as GlideLike & GlideSettings;
  const cluster = isFn(c.fcallWithRoute);
  const limit = typeof c.inflightRequestsLimit === 'number' && c.inflightRequestsLimit > 0 ? c.inflightRequestsLimit : 1000;
  // Floodgate's own commands stay below the client's in-flight limit (leaving the application a tenth of it):
  // past it GLIDE refuses a request without sending it, and a refused check would take the failure policy
  // (with 'open', an admission). The rest wait here, in order, within their deadline.
  const cap = Math.max(1, Math.floor(limit * 0.9));
  let inFlight = 0;
  const waiting: (() => void)[] = [];
  let warned = false;
  const warn = (why: string): void => {
    if (warned) return;
    warned = true;
    adapter.logger?.warn(
      `floodgate: the Valkey GLIDE client ${why} (inflightRequestsLimit ${limit}): Floodgate holds its checks back ` +
        'so that none is refused and admitted by the failure policy, which adds latency and may run them out of ' +
        'their deadline. Raise inflightRequestsLimit when creating the client (docs/clients.md)',
    );
  };
  const route = (key: string | undefined): Record<string, unknown> =>
    cluster && key !== undefined
      ? { route: { type: 'primarySlotKey', key }, decoder: GLIDE_DECODER_STRING }
      : { decoder: GLIDE_DECODER_STRING };
  const release = (): void => {
    inFlight--;
    waiting.shift()?.();
  };
  const send = (cmd: string[], key: string | undefined, deadlineAt: number): Promise<unknown> => {
    const attempt = (): Promise<unknown> => {
      if (performance.now() >= deadlineAt) {
        return Promise.reject(
          new StoreError('overload', `not sent: the Valkey GLIDE client's in-flight limit (${limit}) held it until its deadline`),
        );
      }
      inFlight++;
      return c.customCommand(cmd, route(key)).then(
        (v) => {
          release();
          return v;
        },
        (err: unknown) => {
          release();
          if (!INFLIGHT_REFUSED.test(err instanceof Error ? err.message : String(err))) throw err;
          // Refused for the client's own limit (the application's commands filled it): never sent, so it is
          // safe to send once a place frees.
          warn('refused a command at its in-flight limit');
          return wait().then(attempt);
        },
      );
    };
    const wait = (): Promise<void> => new Promise<void>((resolve) => waiting.push(resolve));
    if (inFlight < cap) return attempt();
    warn('has as many commands in flight as Floodgate lets it');
    return wait().then(attempt);
  };
  const adapter: ClientAdapter = {
    library: 'glide',
    target: c,
    isCluster: cluster,
    requestTimeoutMs: typeof c.requestTimeout === 'number' ? c.requestTimeout : 250,
    readiness: () => (c.isClosed === true ? { down: 'the Valkey GLIDE client is closed' } : 'ready'),
    onFirstReady: (done) => done(),
    evalScript: (script, keys, argv, deadlineAt = Infinity) =>
      evalWithFallback(script, keys, argv, (cmd) => send(cmd, keys[0], deadlineAt)),
    del: (key) => send(['DEL', key], key, Infinity),
    coalesce: () => undefined, // GLIDE pipelines concurrent requests by itself
    infoMemory() {
      const info = c.customCommand(
        ['INFO', 'memory'],
        cluster ? { route: 'allPrimaries', decoder: GLIDE_DECODER_STRING } : { decoder: GLIDE_DECODER_STRING },
      );
      return [
        info.then((r) => {
          if (typeof r === 'string') return r;
          // A multi-node reply: { address: info } (or [{ key, value }] with some decoders).
          const values = Array.isArray(r) ? r.map((e) => (e as { value: unknown }).value) : Object.values(r as object);
          return values.map(String).join('\n');
        }),
      ];
    },
  };
  return adapter;
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

function customAdapter(c: ScriptClient): ClientAdapter {
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
