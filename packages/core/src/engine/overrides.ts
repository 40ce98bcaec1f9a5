import { ArgumentError, ConfigError, describeValue } from '../kernel/errors';
import { shared } from '../kernel/state';
import { ANY_IPV6_KEYING, identifierMistake, type Ipv6Keying } from '../config/list-entry';
import { parseDuration, type Rule, type RuleInput } from '../config/rules';
import { overridesKey, overridesVersionKey } from '../scripts/keys';
import { RedisStore } from '../stores/redis';
import type { Store } from '../stores/types';
import type { ResolvedOptions } from './options';
import { RuleSets, resolveExtraRules } from './rule-sets';
import { describeRules } from './operator';
import type { PlanState } from './plan';

/*
 * Per-identifier overrides (docs/overrides.md): one identifier checked under a plan of the limiter, or under
 * rules of its own, until an optional expiry. Kept in Redis in one hash per limiter, `<prefix>:!o:{<prefix>}:
 * <name>` (identifier -> JSON), with a version beside it that every change increments (scripts/keys.ts);
 * without `redis`, in this process. The limiter keeps them in process: loaded at its first check (which
 * waits for that one read), then refreshed every `refreshMs` by one script call that answers the hash only
 * when the version moved. A check never reads Redis for them, except while the limiter has never read them
 * (Redis was unreachable at its first check): the first check that finds the client connected again waits
 * for a read, as the first check did. Redis down: the last loaded stay in force.
 */

/** What an override gives its identifier: one of the limiter's plans, or rules of its own (as `limits` takes them). */
export type OverrideInput = { plan: string; limits?: never } | { limits: RuleInput | RuleInput[]; plan?: never };

export interface OverrideSetOptions {
  /** How long it applies: ms or a duration string ('1h'), up to a year. Default: until deleted. */
  ttl?: number | string;
}

/** An override as stored: its plan or its rules (window in ms), and when it ends (ms since the epoch). */
export interface Override {
  identifier: string;
  plan?: string;
  limits?: RuleInput[];
  expiresAt?: number;
  /**
   * Present when this limiter does not apply the override, and why: a plan it does not have (written before
   * the plan was removed, or by another version), or rules it cannot run. Its checks of the identifier run
   * as without an override; delete it, or set it again.
   */
  ignored?: string;
}

/** limiter.overrides: set, read and delete the limiter's overrides (in Redis, or in process without `redis`). */
export interface LimiterOverrides {
  /** Whether the limiter applies overrides (the `overrides` option). The methods reject with a ConfigError when not. */
  readonly enabled: boolean;
  /** Sets (or replaces) the identifier's override; this process applies it at once, the others within `refreshMs`. */
  set(identifier: string, override: OverrideInput, options?: OverrideSetOptions): Promise<void>;
  /** The identifier's override in force, read from the store (not the process's copy); `ignored` says when this limiter does not apply it. */
  get(identifier: string): Promise<Override | undefined>;
  /** Every override in force, by identifier; `ignored` on those this limiter does not apply. */
  list(): Promise<Override[]>;
  /** Removes the identifier's override: true when it had one in force. */
  delete(identifier: string): Promise<boolean>;
  /** Reads the store now instead of at the next refresh (the next check applies what it found). */
  refresh(): Promise<void>;
}

/** The deadline of set, get, list and delete: an operator's call, as block() and unblock() have (stores/redis.ts). */
const ADMIN_BUDGET_MS = 2_000;

/** Longest identifier an override takes (the hash field is the identifier itself). */
export const MAX_OVERRIDE_IDENTIFIER = 512;

/*
 * KEYS[1] the overrides hash, KEYS[2] its version; ARGV[1] the version this process holds.
 * Reply: { version } when it is still that one, else { version, field, value, field, value, ... }.
 */
const READ_LUA = `local v = redis.call('GET', KEYS[2]) or '0'
if v == ARGV[1] then return { v } end
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, v)
return out`;

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

/** A control character, a lone surrogate or a line separator: never in an identifier an override names. */
// eslint-disable-next-line no-control-regex
const HOSTILE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/*
 * How the adapters checking a limiter key IPv6 clients (`ipv6Subnet`), by `<prefix>:<name>` (limiters of one
 * prefix and name share their keys, hence their identifiers): what set() accepts of an `ip:` identifier.
 * A limiter no adapter checks (core alone, the command line's) accepts every form an adapter may hold.
 */
const keyings = shared('ipv6Keyings', () => new Map<string, Set<Ipv6Keying>>());

/** An adapter checks `limiter` with this `ipv6Subnet` (http/http-limiter.ts). */
export function noteIpv6Keying(limiter: { prefix?: unknown; name?: unknown }, keying: Ipv6Keying): void {
  if (typeof limiter.prefix !== 'string' || typeof limiter.name !== 'string') return;
  const id = `${limiter.prefix}:${limiter.name}`;
  const set = keyings.get(id) ?? new Set();
  keyings.set(id, set.add(keying));
}

/**
 * An identifier set() may give an override: checkOverrideIdentifier's, and none that names an address in a
 * form no check of this limiter holds (config/list-entry.ts): a bare address, another spelling, a range,
 * an IPv6 address the adapters key by its network. Refused with the identifier meant; get() and delete()
 * take any, so that an override stored before stays reachable.
 */
function checkSettable(identifier: unknown, prefix: string, name: string): string {
  const id = checkOverrideIdentifier(identifier);
  assertCheckable(id, prefix, name, "an override's identifier", 'apply it');
  return id;
}

/**
 * Refuses an identifier an operator gave (an override's, a block's, a reset's) that names a client's address
 * in a form no check of this limiter holds, with the identifier meant: `what` names it, `effect` says what
 * no check would do (config/list-entry.ts, identifierMistake).
 */
export function assertCheckable(id: string, prefix: string, name: string, what: string, effect: string): void {
  const mistake = identifierMistake(id, [...(keyings.get(`${prefix}:${name}`) ?? ANY_IPV6_KEYING)]);
  if (mistake === undefined) return;
  const meant = mistake.meant === undefined ? '' : `: did you mean ${JSON.stringify(mistake.meant)}?`;
  throw new ArgumentError(`${what} ${describeValue(id)} ${mistake.why}, so no check would ${effect}${meant}`);
}

/** An identifier an override may name: a string of 1 to 512 characters without control characters. */
export function checkOverrideIdentifier(identifier: unknown): string {
  if (typeof identifier !== 'string' || identifier.length === 0 || identifier.length > MAX_OVERRIDE_IDENTIFIER) {
    throw new ArgumentError(
      `an override's identifier must be a string of 1 to ${MAX_OVERRIDE_IDENTIFIER} characters; got ${describeValue(identifier)}`,
    );
  }
  if (HOSTILE.test(identifier)) {
    throw new ArgumentError(`an override's identifier must not hold control characters; got ${JSON.stringify(identifier)}`);
  }
  return identifier;
}

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
  /** The version of the hash the map was built from ('' before the first read). */
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
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

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

  /**
   * At a check: starts the first read and the refreshes; the first read while it runs (the check waits for
   * it). A limiter that never read them because Redis was unreachable reads again at the first check that
   * finds the client connected, and that check (with those arriving meanwhile) waits for the read: a process
   * started during an outage applies the overrides from its first check Redis answers, not a refresh later.
   */
  pending(): Promise<void> | undefined {
    if (this.redis === undefined) {
      this.started = true;
      return undefined;
    }
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

  /** A read checks wait for, with the limiter's deadline. */
  private firstRead(): Promise<void> {
    return this.read(true).finally(() => {
      this.first = undefined;
    });
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
    this.writes++;
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
    this.writes++;
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
    if (this.redis === undefined) return;
    // Before any check: the first read, which starts the refreshes.
    if (!this.started) return this.pending();
    await this.read(true);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private assertEnabled(): void {
    if (!this.enabled) {
      throw new ConfigError('overrides', `is off for limiter '${this.opts.name}': create it with \`overrides: true\` to set overrides`);
    }
  }

  private now(): number {
    return this.opts.clock ? this.opts.clock() : Date.now();
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

  /** Reads the hash when its version moved, and rebuilds the map; a failure keeps the map as it is. */
  private read(first: boolean): Promise<void> {
    if (this.reading) return this.reading;
    const redis = this.redis!;
    const keys = [this.hashKey, this.versionKey];
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

  /**
   * The next refresh. The timer holds the table weakly: a limiter nobody references (never closed) is
   * collected with its table, and its refreshes stop (registry.ts frees its name the same way).
   */
  private schedule(): void {
    if (this.closed) return;
    const ref = new WeakRef(this);
    this.timer = setTimeout(() => ref.deref()?.refreshNow(), this.opts.overridesRefreshMs);
    this.timer.unref?.();
  }

  private refreshNow(): void {
    void this.read(false).finally(() => this.schedule());
  }

  /**
   * A read's reply: the map rebuilt from the hash (entries this version cannot apply are skipped, with a
   * warning). The rule sets no stored override uses any more are freed before the new ones are compiled,
   * as the setting process does: an override replaced at the bound on rule sets is the 256th set here too,
   * never the 257th, whatever order the processes free and compile in.
   */
  private apply(reply: readonly string[]): void {
    const version = String(reply[0]);
    this.loaded = true;
    if (reply.length === 1 && version === this.version) return;
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
    this.version = version;
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

/** An override as the hash holds it: without its identifier (the field) and without `ignored` (this limiter's reading). */
type Stored = Omit<Override, 'identifier' | 'ignored'>;

/** A stored override's JSON, or undefined when it is not one. */
function parseStored(json: string): Stored | undefined {
  let o: unknown;
  try {
    o = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const { plan, limits, expiresAt } = o as Record<string, unknown>;
  if (expiresAt !== undefined && typeof expiresAt !== 'number') return undefined;
  if (typeof plan === 'string' && limits === undefined) return { plan, ...(expiresAt === undefined ? {} : { expiresAt }) };
  if (Array.isArray(limits) && plan === undefined) {
    return { limits: limits as RuleInput[], ...(expiresAt === undefined ? {} : { expiresAt }) };
  }
  return undefined;
}
