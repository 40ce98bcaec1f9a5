import type { RedisStore } from '../stores/redis';
import type { ResolvedOptions } from './options';

/*
 * How a limiter keeps its overrides current from Redis (docs/overrides.md): the first read at its first
 * check (which waits for it, within the limiter's deadline), then one read every `refreshMs`, on its runtime's
 * timers (kernel/runtime.ts), that answers the hash only when its version moved. While the limiter has never
 * read them (Redis unreachable at its first check), the first check that finds the client connected again
 * waits for a read, as the first check did. A failed read keeps what was loaded. What a read's reply makes of
 * the hash is the table's (overrides.ts).
 */

/*
 * KEYS[1] the overrides hash, KEYS[2] its version; ARGV[1] the version this process holds.
 * Reply: { version } when it is still that one, else { version, field, value, field, value, ... }.
 */
export const READ_LUA = `local v = redis.call('GET', KEYS[2]) or '0'
if v == ARGV[1] then return { v } end
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, v)
return out`;

export class OverrideRefresh {
  /** The version of the hash the table was built from ('' before the first read). */
  private version = '';
  /** The first read, while it runs; checks wait for it. */
  private first: Promise<void> | undefined;
  private started = false;
  /** Whether a read ever succeeded. */
  private loaded = false;
  /** Never loaded, and the last read failed while the client was not connected: the next check that finds it connected reads. */
  private awaitingConnection = false;
  private reading: Promise<void> | undefined;
  /** This process's writes so far: a read sent before one of them may miss it, and is not applied. */
  private writes = 0;
  private cancel: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly redis: RedisStore,
    /** The hash and its version. */
    private readonly keys: readonly [string, string],
    private readonly opts: Pick<ResolvedOptions, 'timeoutMs' | 'overridesRefreshMs' | 'runtime'>,
    /** Rebuilds the table from a reply that holds the hash (its version moved). */
    private readonly rebuild: (reply: readonly string[]) => void,
  ) {}

  /**
   * At a check: starts the first read and the refreshes; the first read while it runs (the check waits for
   * it). A limiter that never read them because Redis was unreachable reads again at the first check that
   * finds the client connected, and that check (with those arriving meanwhile) waits for the read: a process
   * started during an outage applies the overrides from its first check Redis answers, not a refresh later.
   */
  pending(): Promise<void> | undefined {
    if (!this.started) {
      this.started = true;
      this.first = this.firstRead().finally(() => this.schedule());
    } else if (this.first === undefined && this.awaitingConnection && this.redis.connected) {
      // Once per reconnection: a read that fails now, connected, is left to the refreshes.
      this.awaitingConnection = false;
      this.first = this.firstRead();
    }
    return this.first;
  }

  /** limiter.overrides.refresh(): a read now (before any check, the first read, which starts the refreshes). */
  async refresh(): Promise<void> {
    if (!this.started) return this.pending();
    await this.read(true);
  }

  /** This process wrote an override: a read sent before it is not applied. */
  wrote(): void {
    this.writes++;
  }

  close(): void {
    this.closed = true;
    this.cancel?.();
  }

  /** A read checks wait for, with the limiter's deadline. */
  private firstRead(): Promise<void> {
    return this.read(true).finally(() => {
      this.first = undefined;
    });
  }

  /** Reads the hash when its version moved, and rebuilds the table; a failure keeps it as it is. */
  private read(first: boolean): Promise<void> {
    if (this.reading) return this.reading;
    const redis = this.redis;
    const keys = [...this.keys];
    // The first read with the limiter's deadline (a check waits for it); refreshes only while connected.
    const reply = first
      ? redis.script('overrides', READ_LUA, keys, [this.version], this.opts.timeoutMs)
      : redis.sideWrite(READ_LUA, keys, [this.version]);
    const writes = this.writes;
    // A reply sent before this process's own write may not hold it: the next refresh reads again.
    this.reading = reply
      .then((r) => (writes === this.writes ? this.apply(r as string[]) : undefined))
      .catch(() => {
        // Never read, and Redis unreachable: the first check after it connects reads (pending()).
        if (!this.loaded && !redis.connected) this.awaitingConnection = true;
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  private apply(reply: readonly string[]): void {
    const version = String(reply[0]);
    this.loaded = true;
    if (reply.length === 1 && version === this.version) return;
    this.rebuild(reply);
    this.version = version;
  }

  /**
   * The next refresh, on the runtime's timer (unref'd). The timer holds this loop weakly, and only the table
   * holds the loop: a limiter nobody references (never closed) is collected with its table, and its
   * refreshes stop (registry.ts frees its name the same way).
   */
  private schedule(): void {
    if (this.closed) return;
    const ref = new WeakRef(this);
    this.cancel = this.opts.runtime.timeout(() => ref.deref()?.refreshNow(), this.opts.overridesRefreshMs!, true);
  }

  private refreshNow(): void {
    void this.read(false).finally(() => this.schedule());
  }
}
