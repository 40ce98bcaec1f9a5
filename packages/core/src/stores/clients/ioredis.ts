import { coalesceWrites } from '../coalesce';
import { isFn, type ClientAdapter, type Script } from './types';
import { maskedAddress, maskedUrl, type ConnectionParts } from './address';

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

/**
 * What the adapter reads of a client besides IoredisLike, at run time: not in the public type, which a
 * client must match (a Cluster declares `startupNodes` private, and an interface naming it would refuse it).
 */
interface IoredisInternals {
  on?(event: string, listener: (...a: unknown[]) => void): unknown;
  listenerCount?(event: string): number;
  /** The connection options (a `Redis`), or the Cluster's (its nodes' in `redisOptions`). */
  options?: ConnectionParts & { redisOptions?: ConnectionParts };
  startupNodes?: unknown[];
}

interface InfoNode {
  info?(section: string): Promise<string>;
  nodes?(role: string): InfoNode[];
}

const FIRST_CONNECT_STATES = new Set(['wait', 'connecting', 'connect']);

/** A Cluster's address: its first startup node (with the nodes' credentials), and how many there are. */
function clusterAddress(c: IoredisInternals): string | undefined {
  const nodes = c.startupNodes ?? [];
  const first = nodes[0];
  const where =
    typeof first === 'string'
      ? maskedUrl(first)
      : maskedAddress({
          host: '127.0.0.1',
          port: 6379,
          ...c.options?.redisOptions,
          ...(typeof first === 'number' ? { port: first } : (first as ConnectionParts | undefined)),
        });
  return where && `${where} (a Cluster${nodes.length > 1 ? ` of ${nodes.length} startup nodes` : ''})`;
}

/**
 * ioredis prints "[ioredis] Unhandled error event" on every failed reconnection of a `Redis` that has no
 * 'error' listener, and that is all a listener changes about it (Redis#silentEmit). Floodgate reports the
 * outage itself (engine/failure.ts), so on a client without one it listens, and keeps the last error for
 * that warning. A client with its own listener is left as it is, and so is a Cluster: there an 'error'
 * nobody listens to can also be thrown (sharded subscribers), which a listener would hide.
 */
function listenForErrors(c: IoredisLike & IoredisInternals): (() => string | undefined) | undefined {
  if (c.isCluster === true || !isFn(c.on) || !isFn(c.listenerCount) || c.listenerCount('error') > 0) return undefined;
  let last: string | undefined;
  c.on('error', (err: unknown) => {
    // Not instanceof Error: a socket's error may come from another realm (a VM context, a test sandbox).
    const message = (err as { message?: unknown } | null)?.message;
    last = typeof message === 'string' ? message : String(err);
  });
  return () => last;
}

export function ioredisAdapter(c: IoredisLike): ClientAdapter {
  type Command = (numKeys: number, ...a: (string | number)[]) => Promise<unknown>;
  const commands = new Map<Script, Command>();
  return {
    library: 'ioredis',
    target: c,
    isCluster: c.isCluster === true,
    address: c.isCluster === true ? clusterAddress(c as IoredisInternals) : maskedAddress((c as IoredisInternals).options),
    lastConnectionError: listenForErrors(c),
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
