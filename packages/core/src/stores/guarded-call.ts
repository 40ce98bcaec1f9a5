import { StoreError } from '../kernel/errors';
import type { Runtime } from '../kernel/runtime';
import type { Reply } from '../scripts/reply';
import type { ClientHealth } from './circuit-breaker';
import type { Flush } from './coalesce';
import { toStoreError } from './deadline';
import type { Deadline } from '../kernel/deadlines';

/**
 * Called once when a command is done with: when it settles, even after its caller's deadline, with the reply
 * (undefined on an error or when nothing was sent) and whether the deadline had already passed; or at a
 * deadline that passed in silence (no reply from the server since it was sent), when it counts as lost.
 */
export type Settled = (reply: Reply | undefined, late: boolean) => void;

/** A call parked until its client's first connection. */
export interface ReadyWaiter {
  ready(): void;
  fail(err: StoreError): void;
}

/** What a call needs of its store (stores/guarded-store.ts). */
export interface CallHost {
  /** Its deadlines, its clock and the end of a turn (kernel/runtime.ts). */
  readonly runtime: Runtime;
  /** The client's breaker and the count of replies it has had. */
  readonly health: ClientHealth;
  /** Sends `call.send()` with `call`'s deadline and sets `call.flush` to the write the command left in. */
  dispatch<T>(call: GuardedCall<T>): Promise<T>;
  /** Warns, once per client, about an eviction policy that can evict Floodgate's keys. */
  checkEviction(): void;
}

/**
 * The deadline, readiness and breaker around one command (docs/design.md, "Deadline"): it settles within
 * its budget whatever the server does, is sent at most once, and only connection-level faults feed the
 * client's circuit breaker. When the deadline passes, it settles on the next setImmediate, so that a reply
 * already sitting in the socket buffer still wins. On its store's runtime (kernel/runtime.ts): real time,
 * even under a test's fake timers (kernel/real-timers.ts), unless a test gave a virtual one. One object per command: its deadline entry, its waiter for a first connection
 * and its state, without a closure each.
 */
export class GuardedCall<T> implements Deadline, ReadyWaiter {
  at = 0;
  lane: Deadline['lane'];
  prev: Deadline | undefined;
  next: Deadline | undefined;
  /** When it was sent (the runtime's clock); undefined while it has not been. */
  sentAt: number | undefined;
  /** The write turn it left in (stores/coalesce.ts), set by the host's dispatch. */
  flush: Flush | undefined;
  private done = false;
  /** Counted as lost at a silent deadline: a late reply no longer reaches `settled`. */
  private released = false;
  private probe = false;
  /** The client's reply count when this was sent: more since means the server kept answering. */
  private repliesAtSend = 0;
  /** The waiters' set it is parked in, until its client's first connection. */
  private waitingIn: Set<ReadyWaiter> | undefined;

  constructor(
    private readonly host: CallHost,
    readonly send: () => Promise<T>,
    readonly budgetMs: number,
    private readonly settled: Settled | undefined,
    private readonly resolve: (value: T) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  /** Starts the deadline's clock at `now` (the runtime's clock). */
  start(now: number): void {
    this.host.runtime.deadlines.add(this, Math.max(this.budgetMs, 0), now);
  }

  /** Parks the call in `waiters` until the client's first connection (ready() or fail()). */
  waitIn(waiters: Set<ReadyWaiter>): void {
    this.waitingIn = waiters;
    waiters.add(this);
  }

  ready(): void {
    this.go(this.host.runtime.now());
  }

  fail(err: StoreError): void {
    this.finish(err);
  }

  /** Refused before sending (the client is down): nothing was sent. */
  refuse(err: StoreError): void {
    this.settled?.(undefined, false);
    this.finish(err);
  }

  /** Sends, unless the breaker refuses; `now` is the runtime's clock. */
  go(now: number): void {
    if (this.done) return;
    const { health } = this.host;
    try {
      this.probe = health.breaker.admit();
    } catch (err) {
      this.refuse(err as StoreError);
      return;
    }
    this.sentAt = now;
    this.repliesAtSend = health.replies;
    this.host.checkEviction();
    this.host.dispatch(this).then(
      (value) => this.answered(value),
      (err: unknown) => this.failed(err),
    );
  }

  /** From the deadline queue: the deadline passed with the call still pending. */
  expire(): void {
    this.host.runtime.afterTurn(() => this.timedOut());
  }

  private answered(value: T): void {
    const { health } = this.host;
    health.replies++;
    health.breaker.succeeded(this.probe);
    if (!this.released) this.settled?.(value as Reply, this.done);
    this.finish(undefined, value);
  }

  private failed(err: unknown): void {
    const { health } = this.host;
    const error = toStoreError(err);
    if (error.kind === 'reply' || error.kind === 'unsupported') {
      // An error reply is still a reply: the connection works.
      health.replies++;
      health.breaker.succeeded(this.probe);
    } else if (error.kind === 'timeout' && health.replies > this.repliesAtSend) {
      // The client's own request timeout (Valkey GLIDE's) while other replies kept arriving: not silence.
      health.breaker.released(this.probe);
    } else if (!this.done) health.breaker.failed(this.probe);
    if (!this.released) this.settled?.(undefined, this.done);
    this.finish(error);
  }

  private timedOut(): void {
    if (this.done) return;
    const { budgetMs, sentAt } = this;
    if (sentAt === undefined) {
      // Never sent: it never will be (removed from the waiters), so nothing runs after the caller gave up.
      this.settled?.(undefined, true);
      this.finish(new StoreError('timeout', `Redis did not become ready within ${Math.round(budgetMs)} ms`));
      return;
    }
    // Replies kept arriving since this one was sent, or the command left this process too late for the
    // server to have had half the budget (its time went in this process: a turn of thousands of checks,
    // a starved event loop): the server is not what ran out the clock. Only silence while the server
    // had the time to answer is a connection fault (docs/design.md, invariant 6).
    const { health } = this.host;
    const writtenAt = this.flush === undefined ? sentAt : this.flush.at;
    const serverHadMs = writtenAt === undefined ? 0 : this.host.runtime.now() - writtenAt;
    const progressed = health.replies > this.repliesAtSend || serverHadMs < budgetMs / 2;
    if (progressed) health.breaker.released(this.probe);
    else health.breaker.failed(this.probe);
    // The caller's answer first, then the release: a check waiting for this one's place among the units
    // in flight must see this failure (the policy) before it is let in.
    this.finish(
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
      this.released = true;
      this.settled?.(undefined, true);
    }
  }

  /** Settles the caller's promise, once. */
  finish(err: unknown, value?: T): void {
    if (this.done) return;
    this.done = true;
    this.host.runtime.deadlines.remove(this);
    if (this.waitingIn !== undefined) {
      this.waitingIn.delete(this);
      this.waitingIn = undefined;
    }
    if (err === undefined) this.resolve(value as T);
    else this.reject(err);
  }
}
