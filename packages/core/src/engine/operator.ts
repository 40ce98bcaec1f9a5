import { encodeIdentifier, registryKey, topKey } from '../scripts/keys';
import type { ResolvedOptions } from './options';
import type { Rule, RuleInput } from '../config/rules';
import type { RedisStore } from '../stores/redis';

/*
 * What a limiter leaves in Redis for the person on call (the `floodgate` command line, docs/cli.md), beside
 * its state and blocks:
 *
 *   - The registry, `<prefix>:!m:{<prefix>}`: a hash, limiter name -> a description (JSON: algorithm, plans
 *     and rules, lockout, colocate). Limiter names and rules live in the application; the command line reads
 *     them here to inspect an identifier. Written with the limiter's first consuming check that finds the
 *     client connected (in the same write to the socket as that check), or when Redis answers the first
 *     one if it was sent while connecting, and again at a check an hour or more after: one script call each
 *     time (RedisStore.sideWrite: through the client seam, no deadline, no part in the breaker, never queued
 *     while disconnected), never per check, not awaited by the check; kept 30 days from the last.
 *   - The denial sample, `<prefix>:!t:{<prefix>}:<minute>`: per minute, a sorted set of identifiers (encoded
 *     as in keys, so at most 64 characters) by the denials this process gave them. Counted in process (a Map
 *     increment per denial, no Redis call on the check's path) and flushed by one script call at most every
 *     5 seconds; at most 1,000 identifiers per flush (past that, new identifiers of that flush are not
 *     counted), and the key keeps its 1,000 largest counts for an hour.
 *
 * Neither is written by a limiter on a test clock (`clock`): its time is not the wall clock the minutes and
 * the registry's refresh are counted in.
 */

/** The registry's format version (the `v` of a description). */
export const REGISTRY_VERSION = 1;
const REGISTRY_TTL_MS = 30 * 86_400_000;
const REGISTRY_REFRESH_MS = 3_600_000;
/** Identifiers one flush of the denial sample counts; a minute's key keeps as many. */
export const TOP_KEEP = 1_000;
const TOP_FLUSH_MS = 5_000;
const TOP_TTL_MS = 3_600_000;

/** A limiter as the registry describes it. */
export interface LimiterDescription {
  v: number;
  algorithm: string;
  /** Plan name ('' for a limiter without named plans) -> its rules, as `limits` takes them. */
  plans: Record<string, RuleInput[]>;
  /** `scope`: the identifier kinds it may lock (absent in entries written by versions without `lockout.scope`). */
  lockout: { after: number; within: number; duration: number; backoff: number; maxDuration: number; scope?: string[] } | null;
  colocate: boolean;
  /** Present (true) when the limiter applies overrides (the `overrides` option; docs/overrides.md). */
  overrides?: true;
}

/** Resolved rules as `limits` takes them (window in ms), with what the algorithm reads of each. */
export function describeRules(rules: readonly Rule[], algorithm: string): RuleInput[] {
  return rules.map((r) => ({
    limit: r.limit,
    window: r.windowMs,
    ...(r.for === undefined ? {} : { for: r.for }),
    ...(algorithm === 'token-bucket' ? { burst: r.burst } : {}),
    ...(algorithm === 'sliding-window' ? { precision: r.precision } : {}),
    ...(r.unit === undefined ? {} : { unit: r.unit }),
  }));
}

export function describeLimiter(opts: ResolvedOptions): LimiterDescription {
  const algorithm = opts.algorithm.name;
  const plans: Record<string, RuleInput[]> = {};
  for (const plan of opts.plans) plans[plan.name] = describeRules(plan.rules, algorithm);
  const lo = opts.lockout;
  return {
    v: REGISTRY_VERSION,
    algorithm,
    plans,
    lockout: lo
      ? {
          after: lo.after,
          within: lo.withinMs,
          duration: lo.durationMs,
          backoff: lo.backoff,
          maxDuration: lo.maxDurationMs,
          scope: [...lo.scope],
        }
      : null,
    colocate: opts.colocate,
    ...(opts.overridesRefreshMs === undefined ? {} : { overrides: true as const }),
  };
}

const REGISTRY_LUA = `redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1`;

/*
 * KEYS[1] the minute's sample; ARGV[1] how many identifiers to keep; ARGV[2] TTL (ms); ARGV[3 ...] pairs of
 * count, identifier.
 */
const TOP_LUA = `for k = 3, #ARGV, 2 do redis.call('ZINCRBY', KEYS[1], ARGV[k], ARGV[k + 1]) end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[1]) + 1))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1`;

/** A limiter's registry entry and denial sample, on a Redis store (see the top of the file). */
export class OperatorRecords {
  private registeredAt = -Infinity;
  private readonly description: string;
  private counts = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushing: Promise<unknown> | undefined;

  constructor(
    private readonly store: RedisStore,
    private readonly opts: ResolvedOptions,
  ) {
    this.description = JSON.stringify(describeLimiter(opts));
  }

  /** At a consuming check: (re)writes the registry entry when it is due and the client is connected; not awaited. */
  touch(): void {
    const now = Date.now();
    if (now - this.registeredAt < REGISTRY_REFRESH_MS || !this.store.connected) return;
    this.registeredAt = now;
    const key = registryKey(this.opts.prefix);
    this.store.sideWrite(REGISTRY_LUA, [key], [this.opts.name, this.description, REGISTRY_TTL_MS]).catch(() => {
      // Written again at the next consuming call: the registry is for the command line, never for checks.
      this.registeredAt = -Infinity;
    });
  }

  /** A denial given to `identifier` (the decision's binding one). */
  denied(identifier: string): void {
    const c = this.counts.get(identifier);
    if (c !== undefined) this.counts.set(identifier, c + 1);
    else if (this.counts.size < TOP_KEEP) this.counts.set(identifier, 1);
    else return;
    if (this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), TOP_FLUSH_MS);
      this.timer.unref?.();
    }
  }

  /** Sends what was counted since the last flush (one script call), if anything. */
  flush(): Promise<unknown> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.counts.size === 0) return this.flushing ?? Promise.resolve();
    const counts = this.counts;
    this.counts = new Map();
    const merged = new Map<string, number>();
    for (const [id, n] of counts) {
      const enc = encodeIdentifier(id);
      merged.set(enc, (merged.get(enc) ?? 0) + n);
    }
    const argv: (string | number)[] = [TOP_KEEP, TOP_TTL_MS];
    for (const [enc, n] of merged) argv.push(n, enc);
    const key = topKey(this.opts.prefix, Math.floor(Date.now() / 60_000));
    // Not connected: the batch is dropped (a sample; the next denials start the next one).
    this.flushing = this.store.sideWrite(TOP_LUA, [key], argv).catch(() => undefined);
    return this.flushing;
  }
}
