import type { Program } from '../algorithms/compile';
import type { Reply } from '../algorithms/frame';

/** Where a limiter keeps its state: Redis (through ioredis) or this process's memory. */
export interface Store {
  readonly source: 'redis' | 'memory';
  /**
   * Runs the limiter's frame over KEYS and ARGV (the program's Lua in Redis, its algorithm's twin in memory). `now` is the caller's clock, used by the memory
   * store; the Redis store ignores it (its script reads Redis TIME unless ARGV carries a test clock).
   */
  run(program: Program, keys: string[], argv: (string | number)[], now: number): Promise<Reply> | Reply;
  /** Sets a manual block until now + durationMs; `nowArg` is '' (store time) or a test clock. */
  block(key: string, durationMs: number, reason: string, nowArg: string, pad: number, now: number): Promise<void> | void;
  delete(keys: string[]): Promise<void> | void;
}
