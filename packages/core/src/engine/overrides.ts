import { ArgumentError, ConfigError, describeValue } from '../kernel/errors';
import { parseDuration, type Rule } from '../config/rules';
import { overridesKey, overridesVersionKey } from '../scripts/keys';
import { RedisStore } from '../stores/redis';
import type { Store } from '../stores/types';
import type { ResolvedOptions } from './options';
import { RuleSets, resolveExtraRules } from './rule-sets';
import { describeRules } from './operator';
import type { PlanState } from './plan';
import { checkOverrideIdentifier, checkSettable } from './override-identifiers';
import { OverrideRefresh, READ_LUA } from './override-refresh';
import {
  parseStored,
  type LimiterOverrides,
  type Override,
  type OverrideInput,
  type OverrideSetOptions,
  type Stored,
} from './override-types';

export type { LimiterOverrides, Override, OverrideInput, OverrideSetOptions } from './override-types';

export { MAX_OVERRIDE_IDENTIFIER, checkOverrideIdentifier, noteIpv6Keying } from './override-identifiers';

/*
 * Per-identifier overrides (docs/overrides.md): one identifier checked under a plan of the limiter, or under
 * rules of its own, until an optional expiry. Kept in Redis in one hash per limiter, `<prefix>:!o:{<prefix>}:
 * <name>` (identifier -> JSON), with a version beside it that every change increments (scripts/keys.ts);
 * without `redis`, in this process. The limiter keeps them in process (this table): loaded at its first
 * check, then refreshed every `refreshMs` (override-refresh.ts). A check never reads Redis for them, except
 * while the limiter has never read them. Redis down: the last loaded stay in force.
 */

/** The deadline of set, get, list and delete: an operator's call, as block() and unblock() have (stores/redis.ts). */
const ADMIN_BUDGET_MS = 2_000;

/*
 * KEYS[1] the overrides hash, KEYS[2] its version; ARGV[1] identifier, ARGV[2] its override (JSON; '' removes
 * it), ARGV[3] now (ms since the epoch). Removes the expired entries first, then writes and increments the
 * version. Reply: 1 when the identifier had an override in force, else 0.
 */
const WRITE_LUA = `local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local ok, o = pcall(cjson.decode, all[i + 1])
  if not ok or type(o) ~= 'table' or (type(o.expiresAt) == 'number' and o.expiresAt <= tonumber(ARGV[3])) then
    redis.call('HDEL', KEYS[1], all[i])
  end
end
local had = redis.call('HEXISTS', KEYS[1], ARGV[1])
if ARGV[2] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('INCR', KEYS[2])
return had`;

/** An override applied by checks: its plan (a named one, or its rule set compiled), until `expiresAt`. */
interface InForce {
  readonly plan: PlanState;
  readonly expiresAt: number | undefined;
}

/** A stored override as this limiter reads it: one of its plans, rules it can run, or why it ignores it. */
type Reading = { plan: PlanState } | { rules: Rule[] } | { ignored: string };

export class OverrideTable implements LimiterOverrides {
  readonly enabled: boolean;
  /** The overrides checks apply, by identifier. */
  private inForce = new Map<string, InForce>();
  /** Without Redis: the stored overrides (JSON), by identifier. */
  private readonly local = new Map<string, string>();
  private readonly redis: RedisStore | undefined;
  private readonly hashKey: string;
  private readonly versionKey: string;
  /** With Redis: the first read and the refreshes. */
  private readonly refreshes: OverrideRefresh | undefined;

  constructor(
    private readonly opts: ResolvedOptions,
    private readonly byName: ReadonlyMap<string, PlanState>,
    private readonly ruleSets: RuleSets,
    store: Store,
  ) {
    this.enabled = opts.overridesRefreshMs !== undefined;
    this.redis = store instanceof RedisStore ? store : undefined;
    this.hashKey = overridesKey(opts.prefix, opts.name);
    this.versionKey = overridesVersionKey(opts.prefix, opts.name);
    this.refreshes =
      this.redis && this.enabled
        ? new OverrideRefresh(this.redis, [this.hashKey, this.versionKey], opts, (reply) => this.rebuild(reply))
        : undefined;
  }

  /**
   * The plan of the first identifier (in the check's order) with an override in force, or undefined.
   * Synchronous: the map in process, no store call.
   */
  planFor(ids: readonly string[]): PlanState | undefined {
    if (this.inForce.size === 0) return undefined;
    for (const id of ids) {
      const o = this.inForce.get(id);
      if (o === undefined) continue;
      if (o.expiresAt !== undefined && o.expiresAt <= this.now()) {
        this.inForce.delete(id);
        continue;
      }
      return o.plan;
    }
    return undefined;
  }

  /** At a check: the first read of the overrides while it runs (override-refresh.ts); the check waits for it. */
  pending(): Promise<void> | undefined {
    return this.refreshes?.pending();
  }

  async set(identifier: string, override: OverrideInput, options?: OverrideSetOptions): Promise<void> {
    this.assertEnabled();
    const id = checkSettable(identifier, this.opts.prefix, this.opts.name);
    const value = this.resolve(override);
    const expiresAt = this.expiry(options);
    const stored: Stored = { ...value.stored, ...(expiresAt === undefined ? {} : { expiresAt }) };
    // The rule sets the stored overrides use once this one is set: room for them, and the others dropped.
    if (value.rules !== undefined) this.ruleSets.prune('override', await this.assertRoom(id, value.rules));
    const json = JSON.stringify(stored);
    if (this.redis === undefined) {
      // What the Redis script does: the expired entries go first.
      for (const [other, stored] of this.local) if (!this.live(stored)) this.local.delete(other);
      this.local.set(id, json);
    } else await this.redis.script('overrides', WRITE_LUA, [this.hashKey, this.versionKey], [id, json, this.now()], ADMIN_BUDGET_MS);
    // This process at once; the others at their next refresh.
    const plan = value.rules === undefined ? this.byName.get(value.stored.plan!) : this.ruleSets.plan(value.rules, 'override');
    this.refreshes?.wrote();
    if (plan !== undefined) this.inForce.set(id, { plan, expiresAt });
  }

  async get(identifier: string): Promise<Override | undefined> {
    this.assertEnabled();
    const id = checkOverrideIdentifier(identifier);
    return (await this.stored()).find((o) => o.identifier === id);
  }

  async list(): Promise<Override[]> {
    this.assertEnabled();
    return this.stored();
  }

  async delete(identifier: string): Promise<boolean> {
    this.assertEnabled();
    const id = checkOverrideIdentifier(identifier);
    this.refreshes?.wrote();
    this.inForce.delete(id);
    if (this.redis === undefined) {
      const had = this.live(this.local.get(id));
      this.local.delete(id);
      return had;
    }
    const had = await this.redis.script('overrides', WRITE_LUA, [this.hashKey, this.versionKey], [id, '', this.now()], ADMIN_BUDGET_MS);
    return Number(had) === 1;
  }

  async refresh(): Promise<void> {
    this.assertEnabled();
    await this.refreshes?.refresh();
  }

  close(): void {
    this.refreshes?.close();
  }

  private assertEnabled(): void {
    if (!this.enabled) {
      throw new ConfigError('overrides', `is off for limiter '${this.opts.name}': create it with \`overrides: true\` to set overrides`);
    }
  }

  private now(): number {
    return this.opts.clock ? this.opts.clock() : this.opts.runtime.wall();
  }

  private expiry(options: OverrideSetOptions | undefined): number | undefined {
    if (options === undefined) return undefined;
    if (typeof options !== 'object' || options === null) {
      throw new ArgumentError(`override options must be an object such as { ttl: '1h' }; got ${describeValue(options)}`);
    }
    const unknown = Object.keys(options).filter((k) => k !== 'ttl');
    if (unknown.length > 0) throw new ArgumentError(`unknown override option '${unknown[0]}' (known: ttl)`);
    if (options.ttl === undefined) return undefined;
    return this.now() + parseDuration(options.ttl, 'ttl');
  }

  /** Validates an override: a plan of this limiter, or rules as `limits` takes them, of the units its plans count. */
  private resolve(override: unknown): { stored: Stored; rules?: readonly Rule[] } {
    const o = override as { plan?: unknown; limits?: unknown } | null;
    const keys = typeof o === 'object' && o !== null ? Object.keys(o) : [];
    if (keys.length !== 1 || (keys[0] !== 'plan' && keys[0] !== 'limits')) {
      throw new ArgumentError(
        `an override is { plan: '<plan>' } or { limits: [...] }, exactly one of them; got ${describeValue(override)}`,
      );
    }
    if (keys[0] === 'plan') {
      const plan = o!.plan;
      if (typeof plan !== 'string' || this.opts.plans[0]!.name === '' || !this.byName.has(plan)) {
        const known = this.opts.plans[0]!.name === '' ? 'this limiter names no plans' : `known: ${[...this.byName.keys()].join(', ')}`;
        throw new ArgumentError(`unknown plan ${describeValue(plan)} for an override (${known})`);
      }
      return { stored: { plan } };
    }
    const rules = this.rulesOf(o!.limits, 'limits');
    return { stored: { limits: describeRules(rules, this.opts.algorithm.name) }, rules };
  }

  private rulesOf(limits: unknown, path: string): Rule[] {
    return resolveExtraRules(this.opts, limits, path);
  }

  /**
   * Refuses a rule set past the bound on distinct ones (rule-sets.ts), counting those the stored overrides
   * use (this identifier's own replaced); answers the sets in use once it is set.
   */
  private async assertRoom(id: string, rules: readonly Rule[]): Promise<Set<string>> {
    const sets = new Set<string>([RuleSets.keyOf(rules)]);
    for (const o of await this.stored()) {
      if (o.identifier !== id && o.limits !== undefined) sets.add(RuleSets.keyOf(this.rulesOf(o.limits, 'limits')));
    }
    if (sets.size > RuleSets.MAX) {
      throw new ArgumentError(
        `limiter '${this.opts.name}' has ${RuleSets.MAX} distinct rule sets in its overrides' limits already: use a plan, or reuse another override's limits`,
      );
    }
    return sets;
  }

  /** Whether a stored override (JSON) is in force now. */
  private live(json: string | undefined): boolean {
    const o = json === undefined ? undefined : parseStored(json);
    return o !== undefined && (o.expiresAt === undefined || o.expiresAt > this.now());
  }

  /** The overrides in force, from the store. */
  private async stored(): Promise<Override[]> {
    let pairs: [string, string][];
    if (this.redis === undefined) pairs = [...this.local];
    else {
      const reply = (await this.redis.script('overrides', READ_LUA, [this.hashKey, this.versionKey], [''], ADMIN_BUDGET_MS)) as string[];
      pairs = [];
      for (let i = 1; i + 1 < reply.length; i += 2) pairs.push([String(reply[i]), String(reply[i + 1])]);
    }
    const now = this.now();
    const out: Override[] = [];
    for (const [identifier, json] of pairs) {
      const o = parseStored(json);
      if (o === undefined || (o.expiresAt !== undefined && o.expiresAt <= now)) continue;
      const read = this.readingOf(o);
      out.push({ identifier, ...o, ...('ignored' in read ? { ignored: read.ignored } : {}) });
    }
    return out.sort((a, b) => (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0));
  }

  /**
   * A read's reply: the map rebuilt from the hash (entries this version cannot apply are skipped, with a
   * warning). The rule sets no stored override uses any more are freed before the new ones are compiled,
   * as the setting process does: an override replaced at the bound on rule sets is the 256th set here too,
   * never the 257th, whatever order the processes free and compile in.
   */
  private rebuild(reply: readonly string[]): void {
    const read: [string, Reading, number | undefined][] = [];
    const used = new Set<string>();
    const now = this.now();
    for (let i = 1; i + 1 < reply.length; i += 2) {
      const id = String(reply[i]);
      const o = parseStored(String(reply[i + 1]));
      if (o === undefined || (o.expiresAt !== undefined && o.expiresAt <= now)) continue;
      const r = this.readingOf(o);
      if ('rules' in r) used.add(RuleSets.keyOf(r.rules));
      read.push([id, r, o.expiresAt]);
    }
    this.ruleSets.prune('override', used);
    const next = new Map<string, InForce>();
    for (const [id, r, expiresAt] of read) {
      const plan = this.planOf(id, r);
      if (plan !== undefined) next.set(id, { plan, expiresAt });
    }
    this.inForce = next;
  }

  /** A stored override as this limiter reads it: its plan, its rules validated here, or why it is ignored. */
  private readingOf(o: Stored): Reading {
    if (o.plan !== undefined) {
      const named = this.opts.plans[0]!.name !== '';
      const plan = named ? this.byName.get(o.plan) : undefined;
      if (plan !== undefined) return { plan };
      const known = named ? [...this.byName.keys()].join(', ') : 'it names none';
      return { ignored: `plan ${describeValue(o.plan)} is not one of this limiter's plans (${known})` };
    }
    try {
      return { rules: this.rulesOf(o.limits, 'limits') };
    } catch (err) {
      return { ignored: `its limits are not rules this limiter can apply: ${(err as Error).message.replace(/^floodgate: /, '')}` };
    }
  }

  /** The plan checks of `id` run under, or undefined (with a warning) when this limiter cannot apply it. */
  private planOf(id: string, r: Reading): PlanState | undefined {
    let why: string;
    if ('plan' in r) return r.plan;
    if ('ignored' in r) why = r.ignored;
    else {
      try {
        return this.ruleSets.plan(r.rules, 'override');
      } catch (err) {
        why = (err as Error).message.replace(/^floodgate: /, '');
      }
    }
    this.opts.logger.warn(
      `floodgate: limiter '${this.opts.name}': the override of ${JSON.stringify(id.slice(0, 64))} is not applied: ${why}; checks of it run as without an override`,
    );
    return undefined;
  }
}
