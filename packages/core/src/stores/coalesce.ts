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
 * command of the application; this touches only Floodgate's commands and needs no client option.
 * Only a plain socket of a ready standalone client is corked (a Cluster's node clients are not: their
 * commands are already spread over several sockets).
 */

interface Corkable {
  cork(): void;
  uncork(): void;
  writable?: boolean;
}

const corked = new WeakSet<object>();

/** Corks the client's socket until the end of this event-loop turn; a no-op when it is corked already. */
export function coalesceWrites(client: object): void {
  const stream = (client as { stream?: Partial<Corkable> }).stream;
  if (stream === undefined || stream === null || typeof stream.cork !== 'function' || typeof stream.uncork !== 'function') return;
  if (corked.has(stream) || stream.writable === false) return;
  corked.add(stream);
  stream.cork();
  setImmediate(() => {
    corked.delete(stream);
    stream.uncork!();
  });
}
