import type { Logger } from '../../kernel/logger';
import type { Flush } from '../coalesce';

/*
 * What the client seam (index.ts) and every library's adapter share: the adapter's contract and the shapes
 * it is built from. The adapters import these, and the seam imports the adapters, so nothing here imports
 * the seam back.
 */

/** A script as a store sends it: its text and SHA1. */
export interface Script {
  readonly lua: string;
  readonly sha: string;
  /** floodgate_<kind>_<sha prefix>: the ioredis command name (two Floodgate versions in a process never clash). */
  readonly name: string;
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
  /** Where the client connects, its password masked (`redis://:***@host:6379`), when the adapter can tell. */
  readonly address?: string;
  /**
   * The last connection error the client reported (`connect ECONNREFUSED 127.0.0.1:6379`), when the
   * adapter listens for them: what a limiter's warning says it cannot reach its Redis because of.
   */
  lastConnectionError?(): string | undefined;
  /** The client's own per-request timeout, when it has one (Valkey GLIDE's requestTimeout). */
  readonly requestTimeoutMs?: number;
}

type Fn = (...args: never[]) => unknown;

/** Whether a client has a member as a method: clients are recognised by their shape (index.ts). */
export const isFn = (v: unknown): v is Fn => typeof v === 'function';
