import { StoreError } from '../kernel/errors';
import type { Runtime } from '../kernel/runtime';
import { shared } from '../kernel/state';
import { BREAKER_THRESHOLD, CircuitBreaker, PROBE_INTERVAL_MS, type ClientHealth } from './circuit-breaker';
import type { Readiness } from './clients/types';
import { GuardedCall, type CallHost, type ReadyWaiter, type Settled } from './guarded-call';

/*
 * What a remote store owns of its resilience (docs/design.md, "Deadline"), whatever carries its commands:
 * a call settles within the deadline it is given whatever the server does (never connects, accepts TCP and
 * never answers, is paused), it is sent at most once, a call that waited for the first connection past its
 * deadline is never sent, and only connection-level faults feed the circuit breaker (GuardedCall, one per
 * command). The Redis stores carry commands over a client (stores/redis.ts); Floodgate's own tests carry
 * them to a scripted server on a virtual runtime (@floodgate/testing's scripted store), through this same code.
 */

/** What the guard asks of a connection: whether a command can go now, and a call at its first `ready`. */
export interface Link {
  /** The object connection state is kept per (a client: every store on it shares its first-connect waiters). */
  readonly target: object;
  readiness(): Readiness;
  /** Calls `done` once, when the connection is first ready (no argument) or has failed for good. */
  onFirstReady(done: (err?: unknown) => void): void;
}

/** Per connection: whether it was ever ready, and the calls waiting for its first `ready`. */
interface Connection {
  everReady: boolean;
  waiters: Set<ReadyWaiter>;
  /** Whether onFirstReady was asked (once, until the first connection settles). */
  listening: boolean;
}
const connections = shared('connections', () => new WeakMap<object, Connection>());

function connectionOf(link: Link): Connection {
  let c = connections.get(link.target);
  if (c === undefined) {
    c = { everReady: link.readiness() === 'ready', waiters: new Set(), listening: false };
    connections.set(link.target, c);
  }
  return c;
}

export abstract class GuardedStore implements CallHost {
  private readonly conn: Connection;

  protected constructor(
    private readonly link: Link,
    /** Operational time: the deadlines, the end of a turn (kernel/runtime.ts). */
    readonly runtime: Runtime,
    /** The connection's breaker and its count of replies (the Redis stores': shared by every store on one client). */
    readonly health: ClientHealth = { breaker: new CircuitBreaker(BREAKER_THRESHOLD, PROBE_INTERVAL_MS, runtime.now), replies: 0 },
  ) {
    this.conn = connectionOf(link);
  }

  /** Whether the connection is ready now. */
  get connected(): boolean {
    return this.link.readiness() === 'ready';
  }

  get breakerOpen(): boolean {
    return this.health.breaker.isOpen;
  }

  /** Sends a call's command (CallHost); a store that tracks its writes wraps it (stores/redis.ts). */
  dispatch<T>(call: GuardedCall<T>): Promise<T> {
    try {
      return call.send();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Nothing to check by default (CallHost: the Redis stores check the eviction policy). */
  checkEviction(): void {}

  /**
   * The deadline, readiness and breaker around one command (stores/guarded-call.ts); `at`: when `budgetMs`
   * was measured from on the runtime's clock, if the caller read it already (RunContext.at).
   */
  protected call<T>(send: () => Promise<T>, budgetMs: number, settled?: Settled, at?: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call = new GuardedCall<T>(this, send, budgetMs, settled, resolve, reject);
      const now = at ?? this.runtime.now();
      call.start(now);
      const readiness = this.link.readiness();
      if (readiness === 'ready') {
        this.conn.everReady = true;
        call.go(now);
      } else if (!this.conn.everReady && readiness === 'first-connect') {
        call.waitIn(this.conn.waiters);
        this.awaitFirstConnect();
      } else {
        // A client that was ready and lost its connection is not waited for: sending would park the
        // script in the client's offline queue and run it, counted, long after the caller gave up.
        call.refuse(new StoreError('unavailable', readiness === 'first-connect' ? 'Redis connection is reconnecting' : readiness.down));
      }
    });
  }

  /** Listens for the first `ready`, for the calls parked in the waiters (once per connection). */
  private awaitFirstConnect(): void {
    const conn = this.conn;
    if (conn.listening) return;
    conn.listening = true;
    this.link.onFirstReady((err?: unknown): void => {
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
}
