import { evalWithFallback } from './script';
import { isFn, type ClientAdapter } from './types';
import { maskedAddress, maskedUrl, type ConnectionParts } from './address';

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

/** createClient()'s options, read at run time (not in the public type a client must match): its URL, or its socket's host and port. */
interface NodeRedisOptions {
  options?: { url?: unknown; username?: unknown; password?: unknown; database?: unknown; socket?: ConnectionParts };
}

/** Where a node-redis client connects, its password masked (a cluster: undefined). */
function nodeRedisAddress(c: NodeRedisOptions): string | undefined {
  const o = c.options;
  if (o === undefined || o === null || typeof o !== 'object') return undefined;
  return maskedUrl(o.url) ?? maskedAddress({ ...o.socket, username: o.username, password: o.password, db: o.database, tls: o.socket?.tls });
}

const NOT_CONNECTED =
  'the node-redis client is not connected: node-redis never connects by itself, so call `await client.connect()` ' +
  '(for a cluster, `await cluster.connect()`) before the first check (docs/clients.md)';

export function nodeRedisAdapter(c: NodeRedisLike): ClientAdapter {
  const cluster = isFn(c.getNodeClientForKey);
  return {
    library: 'node-redis',
    target: c,
    isCluster: cluster,
    // node-redis throws an 'error' nobody listens to (its documentation asks applications to listen): a
    // listener here would change what the application's client does, so none is added.
    address: cluster ? undefined : nodeRedisAddress(c as NodeRedisOptions),
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
