import type { Cluster, Redis } from 'ioredis';
import { createLimiter, StoreError, type Limiter, type LimiterOptions } from '@floodgate/core';
import {
  algorithmTag,
  blockKey,
  colocatedIndexKey,
  encodeIdentifier,
  indexKey,
  keyScheme,
  registryKey,
  topKey,
  REGISTRY_VERSION,
  SLOTS,
  type LimiterDescription,
} from '@floodgate/core/admin';
import { CliError, EXIT } from './errors';

/*
 * What the command line reads and writes, over one connected client (docs/cli.md). Reads are plain commands;
 * checks are peeks of limiters rebuilt from the registry (they consume nothing); writes (block, unblock,
 * reset) go through those limiters, so they run the same scripts an application's limiter runs: the block
 * index is kept in the same call as the block.
 */

/** A limiter of the prefix, as the registry describes it. */
export interface RegisteredLimiter {
  name: string;
  description: LimiterDescription;
}

const silent = { warn: () => undefined };

export class Floodgate {
  private readonly limiters = new Map<string, Limiter>();

  constructor(
    readonly client: Redis | Cluster,
    readonly prefix: string,
    readonly registered: readonly RegisteredLimiter[],
    private readonly timeoutMs: number,
  ) {}

  /** Reads the prefix's registry; a CliError (exit 4) when there is none. */
  static async open(client: Redis | Cluster, prefix: string, timeoutMs: number, url: string): Promise<Floodgate> {
    const raw = await redisCall(() => client.hgetall(registryKey(prefix)));
    const registered: RegisteredLimiter[] = [];
    for (const [name, json] of Object.entries(raw).sort(([a], [b]) => a.localeCompare(b))) {
      try {
        const description = JSON.parse(json) as LimiterDescription;
        if (description.v === REGISTRY_VERSION && algorithmTag(description.algorithm) !== undefined) registered.push({ name, description });
      } catch {
        // An entry this version cannot read (a newer core's): skipped.
      }
    }
    if (registered.length === 0) {
      throw new CliError(
        EXIT.notFloodgate,
        `no Floodgate limiters under prefix '${prefix}' on ${url}: wrong --prefix or --url? (a limiter registers itself at its first check)`,
      );
    }
    return new Floodgate(client, prefix, registered, timeoutMs);
  }

  /** Whether the prefix keeps every key in one slot (`cluster: { colocate: true }`): a prefix-wide choice. */
  get colocate(): boolean {
    return this.registered.some((l) => l.description.colocate);
  }

  /** The limiter named `name`, rebuilt from its description (peek, reset, unblock; never a consuming check). */
  limiter(name: string): Limiter {
    let limiter = this.limiters.get(name);
    if (limiter === undefined) {
      const { description } = this.registered.find((l) => l.name === name)!;
      const plans = Object.entries(description.plans);
      const options: LimiterOptions = {
        name,
        prefix: this.prefix,
        redis: this.client,
        algorithm: description.algorithm as LimiterOptions['algorithm'],
        limits: plans.length === 1 && plans[0]![0] === '' ? plans[0]![1] : Object.fromEntries(plans),
        failure: 'closed',
        timeoutMs: this.timeoutMs,
        blockCache: false,
        logger: silent,
        ...(description.colocate ? { cluster: { colocate: true } } : {}),
        // Its overrides: what override writes and reads, and what an inspect's peeks apply, as the app's limiter does.
        ...(description.overrides === true ? { overrides: true } : {}),
        // This limiter never makes a consuming check, so what a lockout may lock does not matter here: any
        // kind a rule applies to will do (the entry's own scope may name a kind only the app declared, and
        // entries written before `lockout.scope` have none).
        ...(description.lockout ? { lockout: { ...description.lockout, scope: plans[0]![1][0]?.for ?? 'ip' } } : {}),
      };
      limiter = createLimiter(options);
      this.limiters.set(name, limiter);
    }
    return limiter;
  }

  /** Redis's clock (ms), the one every decision is made on. */
  async now(): Promise<number> {
    const [s, us] = await redisCall(() => this.client.time());
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  blockKeyOf(identifier: string): string {
    const enc = encodeIdentifier(identifier);
    return this.colocate ? `${this.prefix}:!b:{${this.prefix}}:${enc}` : blockKey(this.prefix, enc);
  }

  /** The identifier's block in force, if any. */
  async block(identifier: string, now: number): Promise<{ reason: string; endsAt: number } | undefined> {
    const value = await redisCall(() => this.client.get(this.blockKeyOf(identifier)));
    return parseBlock(value, now);
  }

  stateKeyOf(name: string, identifier: string): string {
    const { description } = this.registered.find((l) => l.name === name)!;
    return keyScheme(this.prefix, name, algorithmTag(description.algorithm)!, description.colocate).state(encodeIdentifier(identifier));
  }

  lockoutKeyOf(name: string, identifier: string): string {
    const { description } = this.registered.find((l) => l.name === name)!;
    return keyScheme(this.prefix, name, algorithmTag(description.algorithm)!, description.colocate).lockout(encodeIdentifier(identifier));
  }

  /** Every block in force, from the block index (one read per slot's index key, and the block keys). */
  async blocks(now: number): Promise<{ identifier: string; reason: string; endsAt: number }[]> {
    const indexes = Array.from({ length: SLOTS }, (_, slot) => indexKey(this.prefix, slot));
    indexes.push(colocatedIndexKey(this.prefix));
    const entries = await redisCall(() =>
      inRounds(indexes, (key) => this.client.zrangebyscore(key, `(${now}`, '+inf', 'WITHSCORES') as Promise<unknown>),
    );
    const members: string[] = [];
    for (const list of entries) for (const pair of pairs(list)) members.push(pair[0]);
    const values = await redisCall(() => inRounds(members, (key) => this.client.get(key)));
    const out: { identifier: string; reason: string; endsAt: number }[] = [];
    members.forEach((key, i) => {
      const block = parseBlock(values[i] ?? null, now);
      if (block !== undefined) out.push({ identifier: identifierOf(key), ...block });
    });
    return out.sort((a, b) => a.endsAt - b.endsAt || a.identifier.localeCompare(b.identifier));
  }

  /** Denials per identifier over the minutes [now - minutes, now], from the denial sample. */
  async top(now: number, minutes: number): Promise<{ identifier: string; denials: number }[]> {
    const current = Math.floor(now / 60_000);
    const keys = Array.from({ length: minutes }, (_, k) => topKey(this.prefix, current - k));
    const lists = await redisCall(() => inRounds(keys, (key) => this.client.zrange(key, '0', '-1', 'WITHSCORES') as Promise<unknown>));
    const sum = new Map<string, number>();
    for (const list of lists) for (const [id, n] of pairs(list)) sum.set(id, (sum.get(id) ?? 0) + Number(n));
    return [...sum]
      .map(([identifier, denials]) => ({ identifier, denials }))
      .sort((a, b) => b.denials - a.denials || a.identifier.localeCompare(b.identifier));
  }

  async close(): Promise<void> {
    await Promise.all([...this.limiters.values()].map((l) => l.close()));
  }
}

/**
 * Commands in flight at once when reading many keys. `--timeout` is per command: with the 16,385 index
 * reads of `blocks` sent at once, the last waited behind all the others, and a --timeout of 300 ms failed
 * on an idle machine (3 s on a loaded one). In rounds of this many, each waits behind a round at most.
 */
const ROUND = 256;

/** fn over every item, ROUND commands in flight at a time; the results in the items' order. */
async function inRounds<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += ROUND) out.push(...(await Promise.all(items.slice(i, i + ROUND).map(fn))));
  return out;
}

/** Sorted-set replies as [member, score] pairs, whether the client gives a flat list (RESP2) or pairs. */
function pairs(reply: unknown): [string, string][] {
  const list = reply as unknown[];
  if (list.length > 0 && Array.isArray(list[0])) return list as [string, string][];
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < list.length; i += 2) out.push([String(list[i]), String(list[i + 1])]);
  return out;
}

/** A block key's value `<until>|<reason>`, when the block is still in force at `now`. */
function parseBlock(value: string | null, now: number): { reason: string; endsAt: number } | undefined {
  if (value === null) return undefined;
  const bar = value.indexOf('|');
  const endsAt = Number(bar === -1 ? value : value.slice(0, bar));
  if (!(endsAt > now)) return undefined;
  return { reason: bar === -1 ? '' : value.slice(bar + 1), endsAt };
}

/** The identifier (as encoded in keys) of a block key of either scheme: the part after `{...}` or inside it. */
function identifierOf(key: string): string {
  const close = key.indexOf('}');
  const after = key.slice(close + 1);
  if (after.startsWith(':')) return after.slice(1);
  return key.slice(key.indexOf('{') + 1, close);
}

/** Runs Redis commands; an error reply or a lost connection becomes a CliError with its exit code. */
export async function redisCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toCliError(err);
  }
}

export function toCliError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof StoreError) {
    const connection = err.kind !== 'reply';
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    return new CliError(
      connection ? EXIT.connection : EXIT.redis,
      `${err.message.replace(/^floodgate: /, '')}${cause ? `: ${cause}` : ''}`,
    );
  }
  const message = (err as { message?: string })?.message ?? String(err);
  const connection = /timed? ?out|ECONNREFUSED|ECONNRESET|Connection is closed|Stream isn't writeable|enableOfflineQueue/i.test(message);
  return new CliError(connection ? EXIT.connection : EXIT.redis, `Redis: ${message}`);
}
