import type { Program } from '../scripts/compiler';
import type { Algorithm } from '../scripts/types';
import type { Reply } from '../scripts/reply';

/** What one check gives a store besides the script's KEYS and ARGV. */
export interface RunContext {
  /** The caller's clock (ms since the epoch): the memory store's time. Redis uses its TIME (or ARGV's test clock). */
  readonly now: number;
  /** How long a remote store may take, waiting for a first connection included (docs/design.md, invariant 6). */
  readonly budgetMs: number;
  /**
   * When `budgetMs` was measured from, on the limiter's runtime clock (runtime.now()): a remote store's
   * deadline counts from it. Unset: from when the store is called.
   */
  readonly at?: number;
  /** A remote store calls it once the command is done with, even after the deadline (stores/redis.ts). */
  readonly settled?: (reply: Reply | undefined, late: boolean) => void;
}

/**
 * Where a limiter keeps its state (docs/design.md, section 3): this process's memory (the algorithms'
 * JavaScript twins, answering at once) or Redis, a single server or a Cluster (the generated scripts,
 * answering within the deadline; readiness, the breaker and the deadline are the store's own business).
 * The limiter calls every store the same way; `remote` says whether a check crosses the network, which is
 * when units in flight, the block cache and the failure policy come into play.
 */
export interface Store {
  readonly source: 'redis' | 'memory';
  readonly remote: boolean;
  /** Runs the program over KEYS and ARGV: a reply now (memory), or one within ctx.budgetMs (Redis). */
  run(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): Promise<Reply> | Reply;
  /**
   * Sets a manual block until now + durationMs, and its entry in the block index `index` (the index key of
   * the block key's slot), in one call; `nowArg` is '' (store time) or a test clock.
   */
  block(key: string, index: string, durationMs: number, reason: string, nowArg: string, pad: number, now: number): Promise<void> | void;
  /** Lifts a block: deletes it, its entry in the block index and the `others` keys (its slot's), in one call. */
  unblock(key: string, index: string, others: string[], nowArg: string, pad: number, now: number): Promise<void> | void;
  delete(keys: string[]): Promise<void> | void;
  /**
   * Gives back what a refundable check consumed (limiter.refund()): per state key, `cost` units of each
   * window or bucket its receipt names that still holds them (AlgorithmUndo), all in one call per Redis
   * (per slot on a Cluster). Never sent twice.
   */
  refund(algorithm: Algorithm, keys: string[], receipts: string[], cost: number | string, ctx: RunContext): Promise<void> | void;
  /**
   * A reservation's settle (scripts/settle.ts): per state key the give-back of what the actual cost left of
   * the estimate, then the charge of what it went past it, in one call per Redis (per slot on a Cluster).
   * Never sent twice.
   */
  settle(program: Program, keys: string[], argv: (string | number)[], ctx: RunContext): Promise<void> | void;
  /**
   * Asks that the checks this turn sends leave in as few calls as they can: one per program (per hash slot on
   * a Cluster) of up to 1,000 checks, instead of calls of BATCH_MAX (stores/turn-batches.ts), for a request
   * that carries many checks (a tRPC batch). Until the end of the turn; nothing to do for a memory store.
   */
  keepWhole(): void;
}
