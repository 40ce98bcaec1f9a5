import { StoreError } from '../../kernel/errors';
import { evalWithFallback } from './script';
import { isFn, type ClientAdapter } from './types';

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

export function glideAdapter(client: GlideLike): ClientAdapter {
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
