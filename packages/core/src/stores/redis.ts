import type { Program } from '../scripts/compiler';
import type { Reply, UndoReceipt } from '../scripts/reply';
import type { Algorithm } from '../scripts/types';
import { giveBackArgs, giveBackLua } from './give-back';
import { StoreError } from '../kernel/errors';
import { healthOf, type ClientHealth } from './circuit-breaker';
import { toStoreError } from './deadline';
import type { RunContext, Store } from './types';
import type { Flush } from './coalesce';
import { adapterOf, scriptOf, type ClientAdapter, type RedisClient } from './clients';
import { checkEvictionPolicy } from './eviction';
import { shared } from '../kernel/state';
import { indexLua } from '../scripts/block-index';
import { afterTurn, realNow, realTimeout } from '../kernel/real-timers';
import { BATCH_MAX, Batcher } from './batch';
import { ScriptBatcher } from './script-batch';
import { keySlot } from '../scripts/keys';
import { safeLogger, type Logger } from '../kernel/logger';

export type { RedisClient } from './clients';

/**
 * Called once when a command is done with: when it settles, even after its caller's deadline, with the reply
 * (undefined on an error or when nothing was sent) and whether the deadline had already passed; or at a
 * deadline that passed in silence (no reply from the server since it was sent), when it counts as lost.
 */
export type Settled = (reply: Reply | undefined, late: boolean) => void;

/** The time (ARGV[n]: '' for Redis TIME, else a test clock) and `fmt`, as the admin scripts read them. */
const ADMIN_PROLOGUE = (n: number): string => `local NOW
if ARGV[${n}] == '' then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  NOW = tonumber(ARGV[${n}])
end
local PAD = tonumber(ARGV[${n + 1}])
local fmt = string.format`;

/*
 * Sets a manual block, and its entry in the block index (scripts/block-index.ts). Its end time is stored
 * in the value, so a decision never rests on the TTL.
 * KEYS[1] block key; KEYS[2] the block index key of its slot; ARGV[1] duration (ms); ARGV[2] reason;
 * ARGV[3] now (ms, '' = Redis TIME); ARGV[4] TTL padding (ms, test mode only). Reply: the block's end time
 * (ms since the epoch).
 */
const BLOCK_LUA = `${ADMIN_PROLOGUE(3)}
local d = tonumber(ARGV[1])
local untilMs = NOW + d
redis.call('SET', KEYS[1], fmt('%d', untilMs) .. '|' .. ARGV[2], 'PX', d + PAD)
${indexLua('KEYS[2]', 'KEYS[1]', 'untilMs')}
return untilMs
`;

/*
 * Lifts a block: deletes the block key and its entry in the block index, and the other keys given (a
 * limiter's lockout state), in one call. KEYS[1] block key; KEYS[2] its block index key; KEYS[3 ...] other
 * keys to delete (of the same slot); ARGV[1] now ('' = Redis TIME); ARGV[2] TTL padding. Reply: 1 when a
 * block was in force, else 0.
 */
const UNBLOCK_LUA = `${ADMIN_PROLOGUE(1)}
local was = redis.call('ZSCORE', KEYS[2], KEYS[1])
redis.call('DEL', unpack(KEYS, 1, 1), unpack(KEYS, 3))
${indexLua('KEYS[2]', 'KEYS[1]', undefined)}
if was and tonumber(was) > NOW then return 1 end
return 0
`;

interface ReadyWaiter {
  ready(): void;
  fail(err: StoreError): void;
}

/** Per client: whether it was ever ready, and the checks waiting for its first connection. */
interface Connection {
  everReady: boolean;
  waiters: Set<ReadyWaiter>;
  /** Whether the ready/error/close listeners are on the client (once, until the first connection settles). */
  listening: boolean;
}
const connections = shared('connections', () => new WeakMap<object, Connection>());

function connectionOf(client: ClientAdapter): Connection {
  let c = connections.get(client.target);
  if (c === undefined) {
    c = { everReady: client.readiness() === 'ready', waiters: new Set(), listening: false };
    connections.set(client.target, c);
  }
  return c;
}

/**
 * The store on one Redis client, of any library the client seam knows (stores/clients/). It owns its resilience (docs/design.md, "Deadline"): a call settles
 * within the deadline it is given whatever the server does (never connects, accepts TCP and never answers,
 * is paused, answers -LOADING), it is sent at most once, and only connection-level faults feed the client's
 * circuit breaker.
 */
export class RedisStore implements Store {
  readonly source = 'redis' as const;
  readonly remote = true;
  protected readonly client: ClientAdapter;
  private readonly health: ClientHealth;
  private readonly conn: Connection;
  /** When the command being sent must have left (performance.now()); read by send() (see call()). */
  private deadlineAt = Infinity;

  constructor(
    client: RedisClient,
    protected readonly logger: Logger = safeLogger(undefined),
  ) {
    this.client = adapterOf(client);
    this.client.logger ??= logger;
    this.health = healthOf(this.client.target);
    this.conn = connectionOf(this.client);
    const slotOf = this.client.isCluster ? keySlot : undefined;
    this.batcher = BATCH_MAX <= 1 ? undefined : new Batcher(this.client, slotOf);
    this.settles = BATCH_MAX <= 1 ? undefined : new ScriptBatcher(this.client, slotOf);
  }

  /** Whether the client is connected now (status 'ready'). */
  get connected(): boolean {
    return this.client.readiness() === 'ready';
  }

  get breakerOpen(): boolean {
    return this.health.breaker.isOpen;
  }

  /**
   * Runs the program once and settles within `budgetMs`: waiting for a first connection counts against
   * the budget, and a check that was still waiting when it ran out is never sent.
   */
  run(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): Promise<Reply> {
    return this.call(() => this.runNow(program, keys, argv), ctx.budgetMs, ctx.settled);
  }

  /**
   * The program's script, compiled for its rules where it can be, in the turn's batch of checks of that
   * program (stores/batch.ts; on a Cluster, of that program and hash slot).
   */
  protected runNow(program: Program, keys: string[], argv: (string | number)[]): Promise<Reply> {
    if (this.batcher === undefined) return this.send(program.algorithm.tag, program.lua, keys, argv);
    const { reply, flush } = this.batcher.add(program, keys, argv, this.deadlineAt);
    this.flush = flush;
    return reply;
  }

  /** The open batches of this store's checks (undefined with batching off). */
  private readonly batcher: Batcher | undefined;
  /** The open batches of this store's settles (stores/script-batch.ts; undefined with batching off). */
  private readonly settles: ScriptBatcher | undefined;

  protected send(kind: string, lua: string, keys: string[], argv: (string | number)[]): Promise<Reply> {
    // Corked first, so that this command joins the turn's one write (stores/coalesce.ts).
    this.flush = this.client.coalesce();
    return this.client.evalScript(scriptOf(kind, lua), keys, argv, this.deadlineAt) as Promise<Reply>;
  }

  /** The write turn of the last command sent (see coalesce.ts); read right after sending. */
  private flush: Flush | undefined;

  /**
   * One call of a script that is not a limiter's program (the leases of concurrency/), with the same
   * deadline, readiness and breaker as a check. On a Cluster every key must be in one slot.
   */
  script(kind: string, lua: string, keys: string[], argv: (string | number)[], budgetMs: number): Promise<unknown> {
    return this.call(() => this.send(kind, lua, keys, argv), budgetMs);
  }

  /**
   * A write for the command line's records (engine/operator.ts), outside every check: sent only while the client
   * is connected (else rejected at once, never queued), with no deadline and no part in the breaker or
   * health: it never decides anything.
   */
  sideWrite(lua: string, keys: string[], argv: (string | number)[]): Promise<unknown> {
    if (!this.connected) return Promise.reject(new Error('not connected'));
    return this.client.evalScript(scriptOf('side', lua), keys, argv);
  }

  block(
    key: string,
    index: string,
    durationMs: number,
    reason: string,
    nowArg: string,
    pad: number,
    _now: number,
    budgetMs = 2_000,
  ): Promise<void> {
    return this.call(() => this.send('block', BLOCK_LUA, [key, index], [durationMs, reason, nowArg, pad]), budgetMs).then(() => undefined);
  }

  unblock(key: string, index: string, others: string[], nowArg: string, pad: number, _now: number, budgetMs = 2_000): Promise<void> {
    return this.call(() => this.send('unblock', UNBLOCK_LUA, [key, index, ...others], [nowArg, pad]), budgetMs).then(() => undefined);
  }

  refund(algorithm: Algorithm, keys: string[], receipts: string[], cost: number | string, ctx: RunContext): Promise<void> {
    return this.call(() => this.refundNow(algorithm, keys, receipts, cost), ctx.budgetMs).then(() => undefined);
  }

  settle(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): Promise<void> {
    return this.call(() => this.settleNow(program, keys, argv), ctx.budgetMs).then(() => undefined);
  }

  /**
   * A settle: one script call over all its keys (a Cluster's: one per slot, settleNow there), in the turn's
   * batch of settles of that program (stores/script-batch.ts; on a Cluster, of that program and slot), so
   * responses that end in one turn settle in one call; with batching off, in the turn's one write (coalesce.ts).
   */
  protected settleNow(program: Program, keys: string[], argv: (string | number)[]): Promise<unknown> {
    const kind = `${program.algorithm.tag}_settle`;
    if (this.settles === undefined) {
      this.flush = this.client.coalesce();
      return this.client.evalScript(scriptOf(kind, program.settle), keys, argv);
    }
    const { done, flush } = this.settles.add(kind, program.settle, keys, argv, this.deadlineAt);
    this.flush = flush;
    return done;
  }

  /** A refund's give-back: one script call over all its keys (a Cluster's: one per slot), in the turn's one write. */
  protected refundNow(algorithm: Algorithm, keys: string[], receipts: string[], cost: number | string): Promise<unknown> {
    this.flush = this.client.coalesce();
    return this.giveBack(algorithm, keys, receipts, cost);
  }

  /**
   * Gives back a check's writes to state keys (of one slot, on a Cluster): per key, its snapshot while the
   * key is still what the check left, else its algorithm receipt (a bare string: the receipt alone). Not
   * idempotent: send it once (stores/cluster.ts). Resolves per key to 1 (snapshot restored) or 2 (receipt
   * ran). Public for tests.
   */
  giveBack(algorithm: Algorithm, stateKeys: string[], receipts: (string | UndoReceipt)[], cost: number | string): Promise<number[]> {
    // Sent whenever it is due (a split check's give-back may follow its deadline): never held back.
    const script = scriptOf(`${algorithm.tag}_undo`, giveBackLua(algorithm));
    return this.client.evalScript(script, stateKeys, giveBackArgs(receipts, cost)) as Promise<number[]>;
  }

  delete(keys: string[], budgetMs = 2_000): Promise<void> {
    // One DEL per key: on a Cluster, keys of different identifiers live in different slots.
    return this.call(() => Promise.all(keys.map((key) => this.client.del(key))), budgetMs).then(() => undefined);
  }

  /**
   * The deadline, readiness and breaker around one command. One timer per call; when it fires, the call
   * settles on the next setImmediate, so a reply already sitting in the socket buffer still wins. Real
   * time, even under a test's fake timers (kernel/real-timers.ts).
   */
  private call<T>(send: () => Promise<T>, budgetMs: number, settled?: Settled): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let done = false;
      let released = false;
      let sentAt: number | undefined;
      let flush: Flush | undefined;
      let probe = false;
      const waiter: ReadyWaiter = { ready: () => go(), fail: (err) => finish(err) };
      const finish = (err: unknown, value?: T): void => {
        if (done) return;
        done = true;
        cancelTimer();
        this.conn.waiters.delete(waiter);
        if (err === undefined) resolve(value as T);
        else reject(err);
      };
      const expire = (): void => {
        if (done) return;
        if (sentAt === undefined) {
          // Never sent: it never will be (removed from the waiters), so nothing runs after the caller gave up.
          settled?.(undefined, true);
          finish(new StoreError('timeout', `Redis did not become ready within ${Math.round(budgetMs)} ms`));
          return;
        }
        // Replies kept arriving since this one was sent, or the command left this process too late for the
        // server to have had half the budget (its time went in this process: a turn of thousands of checks,
        // a starved event loop): the server is not what ran out the clock. Only silence while the server
        // had the time to answer is a connection fault (docs/design.md, invariant 6).
        const writtenAt = flush === undefined ? sentAt : flush.at;
        const serverHadMs = writtenAt === undefined ? 0 : realNow() - writtenAt;
        const progressed = this.health.lastReplyAt > sentAt || serverHadMs < budgetMs / 2;
        if (progressed) this.health.breaker.released(probe);
        else this.health.breaker.failed(probe);
        // The caller's answer first, then the release: a check waiting for this one's place among the units
        // in flight must see this failure (the policy) before it is let in.
        finish(
          progressed
            ? new StoreError(
                'overload',
                `no reply within ${Math.round(budgetMs)} ms while Redis was answering earlier commands (or this process was too busy to wait)`,
              )
            : new StoreError('timeout', `no reply from Redis within ${Math.round(budgetMs)} ms`),
        );
        if (!progressed) {
          // A silent server may never answer (frozen, partitioned): the command counts as lost from here,
          // rather than holding its place among the identifier's units in flight for as long as that lasts.
          released = true;
          settled?.(undefined, true);
        }
      };
      const cancelTimer = realTimeout(() => afterTurn(expire), Math.max(budgetMs, 0));
      const go = (): void => {
        if (done) return;
        try {
          probe = this.health.breaker.admit();
        } catch (err) {
          settled?.(undefined, false);
          finish(err);
          return;
        }
        sentAt = realNow();
        this.checkEviction();
        let sending: Promise<T>;
        try {
          this.flush = undefined;
          this.deadlineAt = sentAt + budgetMs;
          sending = send();
          flush = this.flush;
        } catch (err) {
          sending = Promise.reject(err);
        } finally {
          this.deadlineAt = Infinity;
        }
        sending.then(
          (value) => {
            this.health.lastReplyAt = realNow();
            this.health.breaker.succeeded(probe);
            if (!released) settled?.(value as Reply, done);
            finish(undefined, value);
          },
          (err: unknown) => {
            const error = toStoreError(err);
            if (error.kind === 'reply' || error.kind === 'unsupported') {
              // An error reply is still a reply: the connection works.
              this.health.lastReplyAt = realNow();
              this.health.breaker.succeeded(probe);
            } else if (error.kind === 'timeout' && this.health.lastReplyAt > sentAt!) {
              // The client's own request timeout (Valkey GLIDE's) while other replies kept arriving: not silence.
              this.health.breaker.released(probe);
            } else if (!done) this.health.breaker.failed(probe);
            if (!released) settled?.(undefined, done);
            finish(error);
          },
        );
      };
      const readiness = this.client.readiness();
      if (readiness === 'ready') {
        this.conn.everReady = true;
        go();
      } else if (!this.conn.everReady && readiness === 'first-connect') {
        this.awaitFirstConnect(waiter);
      } else {
        // A client that was ready and lost its connection is not waited for: sending would park the
        // script in the client's offline queue and run it, counted, long after the caller gave up.
        settled?.(undefined, false);
        finish(new StoreError('unavailable', readiness === 'first-connect' ? 'Redis connection is reconnecting' : readiness.down));
      }
    });
  }

  /** Parks a call until the client's first `ready` (one set of listeners per client, however many wait). */
  private awaitFirstConnect(waiter: ReadyWaiter): void {
    const conn = this.conn;
    conn.waiters.add(waiter);
    if (conn.listening) return;
    conn.listening = true;
    this.client.onFirstReady((err?: unknown): void => {
      conn.listening = false;
      const waiting = [...conn.waiters];
      conn.waiters.clear();
      if (err === undefined) {
        conn.everReady = true;
        for (const w of waiting) w.ready();
      } else {
        const error = new StoreError('unavailable', 'Redis did not become ready', err);
        for (const w of waiting) w.fail(error);
      }
    });
  }

  private checkEviction(): void {
    checkEvictionPolicy(this.client, this.logger);
  }
}
