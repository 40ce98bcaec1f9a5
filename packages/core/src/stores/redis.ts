import type { Program } from '../scripts/compiler';
import type { Reply, UndoReceipt } from '../scripts/reply';
import type { Algorithm } from '../scripts/types';
import { giveBackArgs, giveBackLua } from './give-back';
import { healthOf } from './circuit-breaker';
import type { RunContext, Store } from './types';
import type { Flush } from './coalesce';
import { adapterOf, scriptOf, type ClientAdapter, type RedisClient } from './clients';
import { checkEvictionPolicy } from './eviction';
import { indexLua } from '../scripts/block-index';
import { realRuntime, type Runtime } from '../kernel/runtime';
import type { GuardedCall } from './guarded-call';
import { GuardedStore } from './guarded-store';
import { BATCH_MAX, Batcher } from './batch';
import { ScriptBatcher } from './script-batch';
import { keySlot } from '../scripts/keys';
import { safeLogger, type Logger } from '../kernel/logger';

export type { RedisClient } from './clients';
export type { Settled } from './guarded-call';

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

/**
 * The store on one Redis client, of any library the client seam knows (stores/clients/). It owns its resilience (docs/design.md, "Deadline"): a call settles
 * within the deadline it is given whatever the server does (never connects, accepts TCP and never answers,
 * is paused, answers -LOADING), it is sent at most once, and only connection-level faults feed the client's
 * circuit breaker.
 */
export class RedisStore extends GuardedStore implements Store {
  readonly source = 'redis' as const;
  readonly remote = true;
  protected readonly client: ClientAdapter;
  /** When the command being sent must have left (the runtime's clock); read by send() (see dispatch()). */
  private deadlineAt = Infinity;

  constructor(
    client: RedisClient,
    protected readonly logger: Logger = safeLogger(undefined),
    runtime: Runtime = realRuntime,
  ) {
    const adapter = adapterOf(client);
    // One breaker per client, on the clock of the runtime of the first store made on it.
    super(adapter, runtime, healthOf(adapter.target, runtime.now));
    this.client = adapter;
    this.client.logger ??= logger;
    const slotOf = this.client.isCluster ? keySlot : undefined;
    this.batcher = BATCH_MAX <= 1 ? undefined : new Batcher(this.client, slotOf, runtime);
    this.settles = BATCH_MAX <= 1 ? undefined : new ScriptBatcher(this.client, slotOf, runtime);
  }

  /**
   * Runs the program once and settles within `budgetMs`: waiting for a first connection counts against
   * the budget, and a check that was still waiting when it ran out is never sent.
   */
  run(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): Promise<Reply> {
    return this.call(() => this.runNow(program, keys, argv), ctx.budgetMs, ctx.settled, ctx.at);
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

  /**
   * This turn's batches of checks leave whole: at the end of the turn, or at WHOLE_MAX checks
   * (stores/turn-batches.ts); on a Cluster, per slot. Nothing with batching off.
   */
  keepWhole(): void {
    this.batcher?.keepWhole();
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

  /** Sends a call's command with its deadline, and tells it the write turn the command left in (CallHost). */
  override dispatch<T>(call: GuardedCall<T>): Promise<T> {
    try {
      this.flush = undefined;
      this.deadlineAt = call.sentAt! + call.budgetMs;
      const sending = call.send();
      call.flush = this.flush;
      return sending;
    } catch (err) {
      return Promise.reject(err);
    } finally {
      this.deadlineAt = Infinity;
    }
  }

  override checkEviction(): void {
    checkEvictionPolicy(this.client, this.logger);
  }
}
