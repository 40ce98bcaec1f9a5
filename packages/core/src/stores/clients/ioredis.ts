import { coalesceWrites } from '../coalesce';
import { isFn, type ClientAdapter, type Script } from './types';

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

export function ioredisAdapter(c: IoredisLike): ClientAdapter {
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
