import type { Limiter, LimiterOptions } from '@floodgate/core';
import { seam } from '@floodgate/core/testing';

/*
 * A store that answers, stalls, errors or never answers on cue, on a virtual runtime's clock: for the tests
 * whose subject is how the engine reacts to its store (deadlines, the breaker, the failure policies and
 * what 'open' admits, health, units in flight, floods on a cold or paused connection). They run in
 * milliseconds of real time, the same on a loaded machine as on an idle one, and assert counts and virtual
 * time.
 *
 * It is a remote store as core's Redis stores are: every command goes through the same guard (core's
 * GuardedStore: the deadline, the wait for a first connection, the circuit breaker), only what carries the
 * command differs. What the "server" answers is decided by the in-memory twin of Redis's scripts (core's
 * MemoryStore, the algorithms' JavaScript twins), so decisions are real ones. Nothing here speaks the Redis
 * protocol, and nothing Redis itself does (scripts, TTLs, Cluster, clients, exactness under concurrency) is
 * tested on it: those tests run against a real redis-server.
 */

/** How the server treats a command it receives. */
export type Cue =
  /** Runs it and answers after this many ms of virtual time (0: at once). */
  | { answer: number }
  /** Holds it, unrun, until release(): a paused server (CLIENT PAUSE), which runs and answers it then. */
  | 'hold'
  /** Never runs nor answers it: a frozen server, a partition. */
  | 'never'
  /** Fails it after `after` ms (default 0), as a client reports it: a lost connection, an error reply, ... */
  | { error: Fault; after?: number };

/** A failure as a client reports it, mapped by core as it maps a real client's: its kind, or the error itself. */
export type Fault = 'unavailable' | 'reply' | 'unsupported' | 'timeout' | Error;

/** The connection as the guard sees it: connected, connecting for the first time, or lost. */
export type ConnectionState = 'ready' | 'connecting' | 'down';

/** What a client raises for each kind of fault (core's toStoreError maps them back). */
function faultError(fault: Fault): Error {
  if (fault instanceof Error) return fault;
  switch (fault) {
    case 'unavailable':
      return new Error('Connection is closed.');
    case 'reply':
      return Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), { name: 'ReplyError' });
    case 'unsupported':
      return Object.assign(new Error("NOPERM this user has no permissions to run the 'evalsha' command"), { name: 'ReplyError' });
    case 'timeout':
      return new TimeoutError('request timed out');
  }
}

/** A client's own request timeout, as Valkey GLIDE raises it (sent, and no reply in its requestTimeout). */
class TimeoutError extends Error {}

/** The scripted connection: the guard's Link. */
class ScriptedLink implements seam.Link {
  readonly target = this;
  state: ConnectionState;
  private waiting: ((err?: unknown) => void)[] = [];

  constructor(state: ConnectionState) {
    this.state = state;
  }

  readiness(): seam.Readiness {
    if (this.state === 'ready') return 'ready';
    return this.state === 'connecting' ? 'first-connect' : { down: 'Redis connection is down' };
  }

  onFirstReady(done: (err?: unknown) => void): void {
    this.waiting.push(done);
  }

  settle(err?: unknown): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const done of waiting) done(err);
  }
}

export class ScriptedStore extends seam.GuardedStore implements seam.Store {
  readonly source = 'redis' as const;
  readonly remote = true;
  /** The in-memory twin that decides every answer. */
  readonly twin: seam.MemoryStore = new seam.MemoryStore();
  /** Commands the server received (sent to it, whatever became of them). */
  received = 0;
  /** Commands it ran on the twin (what a Redis would have counted). */
  ran = 0;
  /** Commands it answered with a value. */
  answered = 0;
  /** Commands it failed. */
  failed = 0;
  declare readonly runtime: seam.VirtualRuntime;
  private readonly wire: ScriptedLink;
  private standing: Cue = { answer: 0 };
  private readonly queued: Cue[] = [];
  private held: (() => void)[] = [];

  constructor(runtime: seam.VirtualRuntime = seam.virtualRuntime(), connection: ConnectionState = 'ready') {
    const link = new ScriptedLink(connection);
    super(link, runtime);
    this.wire = link;
  }

  /** From now on, every command (after those next() cued). */
  behave(cue: Cue): this {
    this.standing = cue;
    return this;
  }

  /** The next `n` commands only, before the standing behaviour. */
  next(cue: Cue, n = 1): this {
    for (let i = 0; i < n; i++) this.queued.push(cue);
    return this;
  }

  /** Commands held ('hold') and not yet released. */
  get holding(): number {
    return this.held.length;
  }

  /** A held server runs and answers what it held, in the order it received it (a pause that ends). */
  release(): void {
    const held = this.held;
    this.held = [];
    for (const run of held) run();
  }

  /** The connection's state now. */
  get connection(): ConnectionState {
    return this.wire.state;
  }

  /** The connection becomes ready: the first time, the calls waiting for it are sent. */
  connect(): void {
    this.wire.state = 'ready';
    this.wire.settle();
  }

  /** A first connection that fails for good: the calls waiting for it fail. */
  failConnect(err: Error = new Error('connect ECONNREFUSED')): void {
    this.wire.state = 'down';
    this.wire.settle(err);
  }

  /** A connection that was ready is lost: calls are refused without being sent until connect(). */
  drop(): void {
    this.wire.state = 'down';
  }

  run(program: seam.Program, keys: string[], argv: (string | number)[], ctx: seam.RunContext): Promise<seam.Reply> {
    return this.call(
      () => this.serve(() => this.twin.run(program, keys, argv, { now: ctx.now, budgetMs: Infinity }) as seam.Reply),
      ctx.budgetMs,
      ctx.settled,
    );
  }

  block(key: string, index: string, durationMs: number, reason: string, nowArg: string, pad: number, now: number): Promise<void> {
    return this.call(() => this.serve(() => this.twin.block(key, index, durationMs, reason, nowArg, pad, now)), 2_000);
  }

  unblock(key: string, index: string, others: string[], nowArg: string, pad: number, now: number): Promise<void> {
    return this.call(() => this.serve(() => this.twin.unblock(key, index, others, nowArg, pad, now)), 2_000);
  }

  delete(keys: string[]): Promise<void> {
    return this.call(() => this.serve(() => this.twin.delete(keys)), 2_000);
  }

  refund(
    algorithm: Parameters<seam.Store['refund']>[0],
    keys: string[],
    receipts: string[],
    cost: number | string,
    ctx: seam.RunContext,
  ): Promise<void> {
    return this.call(() => this.serve(() => this.twin.refund(algorithm, keys, receipts, cost, ctx)), ctx.budgetMs);
  }

  settle(program: seam.Program, keys: string[], argv: (string | number)[], ctx: seam.RunContext): Promise<void> {
    return this.call(() => this.serve(() => this.twin.settle(program, keys, argv, ctx)), ctx.budgetMs);
  }

  /** Each command is its own here, never batched: nothing to keep whole. */
  keepWhole(): void {}

  /** A command as the server receives it: treated as its cue says. */
  private serve<T>(execute: () => T): Promise<T> {
    this.received++;
    const cue = this.queued.shift() ?? this.standing;
    return new Promise<T>((resolve, reject) => {
      const answer = (): void => {
        this.ran++;
        let value: T;
        try {
          value = execute();
        } catch (err) {
          this.failed++;
          reject(err);
          return;
        }
        this.answered++;
        resolve(value);
      };
      if (cue === 'never') return;
      if (cue === 'hold') {
        this.held.push(answer);
        return;
      }
      if ('error' in cue) {
        const fail = (): void => {
          this.failed++;
          reject(faultError(cue.error));
        };
        if ((cue.after ?? 0) > 0) this.runtime.timeout(fail, cue.after!);
        else queueMicrotask(fail);
        return;
      }
      if (cue.answer > 0) this.runtime.timeout(answer, cue.answer);
      else queueMicrotask(answer);
    });
  }
}

/** A scripted store on a runtime of its own (or `runtime`), its connection in state `connection` (default ready). */
export function scriptedStore(options: { runtime?: seam.VirtualRuntime; connection?: ConnectionState } = {}): ScriptedStore {
  return new ScriptedStore(options.runtime ?? seam.virtualRuntime(), options.connection ?? 'ready');
}

/**
 * A limiter on `store` and its runtime, as it would be on Redis: `failure` and `timeoutMs` apply, and its
 * guards run as they do on a remote store. `options` as createLimiter takes them, without `redis`.
 */
export function scriptedLimiter(store: ScriptedStore, options: LimiterOptions): Limiter {
  return seam.createLimiterOn(options, { runtime: store.runtime, store });
}

/** A scripted store (its connection in state `connection`), its runtime, and a limiter on them. */
export function scripted(
  options: LimiterOptions,
  connection: ConnectionState = 'ready',
): { store: ScriptedStore; rt: seam.VirtualRuntime; limiter: Limiter } {
  const store = scriptedStore({ connection });
  return { store, rt: store.runtime, limiter: scriptedLimiter(store, options) };
}
