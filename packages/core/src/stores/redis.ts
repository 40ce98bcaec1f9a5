import { createHash } from 'node:crypto';
import type { Program } from '../algorithms/compile';
import type { Reply } from '../algorithms/frame';
import { StoreError } from '../errors';
import { breakerFor, type CircuitBreaker } from '../circuit-breaker';
import type { Store } from './types';
import { coalesceWrites } from './coalesce';

/**
 * The part of an ioredis `Redis` or `Cluster` that Floodgate uses. Structural, so that users of the
 * memory store need no ioredis types, and so that both client classes fit.
 */
export interface RedisClient {
  status: string;
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  del(...keys: string[]): Promise<number>;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  removeListener(event: string, listener: (...args: unknown[]) => void): unknown;
  connect?(): Promise<unknown>;
  isCluster?: boolean;
}

type ScriptCommand = (numKeys: number, ...args: (string | number)[]) => Promise<unknown>;

/*
 * Sets a manual block. Its end time is stored in the value, so a decision never rests on the TTL.
 * KEYS[1] block key; ARGV[1] duration (ms); ARGV[2] reason; ARGV[3] now (ms, '' = Redis TIME);
 * ARGV[4] TTL padding (ms, test mode only). Reply: the block's end time (ms since the epoch).
 */
const BLOCK_LUA = `
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[3])
end
local d = tonumber(ARGV[1])
local untilMs = now + d
redis.call('SET', KEYS[1], string.format('%d', untilMs) .. '|' .. ARGV[2], 'PX', d + tonumber(ARGV[4]))
return untilMs
`;

const READY_STATES = new Set(['ready']);
const FIRST_CONNECT_STATES = new Set(['wait', 'connecting', 'connect']);

/** Names commands after their script's hash, so two Floodgate versions in one process never clash. */
function commandName(kind: string, lua: string): string {
  return `floodgate_${kind}_${createHash('sha1').update(lua).digest('hex').slice(0, 10)}`;
}

export class RedisStore implements Store {
  readonly source = 'redis' as const;
  private readonly client: RedisClient;
  /** Shared by every store on this client; see circuit-breaker.ts. */
  readonly breaker: CircuitBreaker;
  private readonly commands = new Map<string, ScriptCommand>();
  private everReady: boolean;
  private connecting: Promise<void> | undefined;

  constructor(client: RedisClient) {
    this.client = client;
    this.breaker = breakerFor(client);
    this.everReady = READY_STATES.has(client.status);
  }

  /**
   * Whether a command may be sent now. A client connecting for the first time is waited for (its own
   * connectTimeout bounds that); a client that was ready and lost its connection is not: sending would
   * park the script in ioredis's offline queue and run it, counted, long after the caller gave up.
   */
  usable(): true | Promise<void> {
    const status = this.client.status;
    if (READY_STATES.has(status)) {
      this.everReady = true;
      return true;
    }
    if (!this.everReady && FIRST_CONNECT_STATES.has(status)) {
      // One wait shared by every check that arrives while connecting: listeners stay O(1).
      this.connecting ??= this.firstConnect().finally(() => {
        this.connecting = undefined;
      });
      return this.connecting;
    }
    throw new StoreError('unavailable', `Redis connection is ${status}`);
  }

  private firstConnect(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (err?: unknown): void => {
        this.client.removeListener('ready', onReady);
        this.client.removeListener('error', onError);
        this.client.removeListener('close', onError);
        if (err === undefined) {
          this.everReady = true;
          resolve();
        } else reject(new StoreError('unavailable', 'Redis did not become ready', err));
      };
      const onReady = (): void => done();
      const onError = (err?: unknown): void => done(err ?? new Error('connection closed'));
      this.client.once('ready', onReady);
      this.client.once('error', onError);
      this.client.once('close', onError);
      if (this.client.status === 'wait') this.client.connect?.().catch(() => undefined);
    });
  }

  /** The command running `lua`; `kind` names it (with the script's hash) and keys the cache with `lua`. */
  protected command(kind: string, lua: string): ScriptCommand {
    let cmd = this.commands.get(lua);
    if (cmd === undefined) {
      const name = commandName(kind, lua);
      const client = this.client as unknown as Record<string, ScriptCommand | undefined>;
      // defineCommand: EVALSHA, EVAL on first use per connection and after NOSCRIPT (ioredis Script).
      if (typeof client[name] !== 'function') this.client.defineCommand(name, { lua });
      cmd = (client[name] as ScriptCommand).bind(this.client);
      this.commands.set(lua, cmd);
    }
    return cmd;
  }

  /** Single Redis: the program's script, compiled for its rules where it can be. */
  run(program: Program, keys: string[], argv: (string | number)[]): Promise<Reply> {
    return this.send(program.algorithm.tag, program.lua, keys, argv);
  }

  protected send(kind: string, lua: string, keys: string[], argv: (string | number)[]): Promise<Reply> {
    const cmd = this.command(kind, lua);
    coalesceWrites(this.client);
    return cmd(keys.length, ...keys, ...argv) as Promise<Reply>;
  }

  async block(key: string, durationMs: number, reason: string, nowArg: string, pad: number): Promise<void> {
    await this.command('block', BLOCK_LUA)(1, key, durationMs, reason, nowArg, pad);
  }

  async delete(keys: string[]): Promise<void> {
    // One DEL per key: on a Cluster, keys of different identifiers live in different slots.
    await Promise.all(keys.map((key) => this.client.del(key)));
  }
}
