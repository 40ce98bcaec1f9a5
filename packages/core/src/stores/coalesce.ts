/*
 * Write coalescing: the checks a server starts in one turn of the event loop (every request that
 * arrived in one poll phase) leave in one write instead of one write each. The first command of a turn
 * corks the client's socket and a setImmediate uncorks it, so Node hands the kernel every queued
 * EVALSHA with one writev; Redis then reads them with one read and answers them with one write. Each
 * check is still its own EVALSHA (one round trip, atomic on its own): only the syscalls are shared,
 * which is what a check costs most on both sides of a fast script (see bench/RESULTS.md).
 * A command waits at most until the end of the current turn (the check phase, before any timer),
 * never for a later request.
 *
 * ioredis's `enableAutoPipelining` batches the same way, but it is the client's option and changes every
 * command of the application; this needs no client option. It is not Floodgate's commands alone that wait
 * for the end of the turn, though: the socket is the client's, so the application's own commands sent on it
 * in the same turn leave in the same writev (at most one turn later than they would have).
 * Only a plain socket of a ready standalone client is corked (a Cluster's node clients are not: their
 * commands are already spread over several sockets).
 * The uncork runs in real time even under a test's fake timers (kernel/real-timers.ts): a fake setImmediate that
 * never fires would leave the socket corked, and the application's own commands on it hanging.
 */

import { afterTurn, realNow } from '../kernel/real-timers';
import { shared } from '../kernel/state';

interface Corkable {
  cork(): void;
  uncork(): void;
  writable?: boolean;
}

/** One turn's writes on one socket: `at` is when they left (realNow()), undefined until then. */
export interface Flush {
  at: number | undefined;
}

const turns = shared('writeTurns', () => new WeakMap<object, Flush>());

/**
 * Corks the client's socket until the end of this event-loop turn (a no-op when it is corked already) and
 * returns the turn's Flush, so a caller can tell when its command actually left (its deadline must not
 * blame Redis for time the command spent in this process). undefined when the socket cannot be corked.
 */
export function coalesceWrites(client: object): Flush | undefined {
  const stream = (client as { stream?: Partial<Corkable> }).stream;
  if (stream === undefined || stream === null || typeof stream.cork !== 'function' || typeof stream.uncork !== 'function') return undefined;
  const open = turns.get(stream);
  if (open !== undefined) return open;
  if (stream.writable === false) return undefined;
  const turn: Flush = { at: undefined };
  turns.set(stream, turn);
  stream.cork();
  afterTurn(() => {
    turns.delete(stream);
    stream.uncork!();
    turn.at = realNow();
  });
  return turn;
}
