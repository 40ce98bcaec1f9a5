import { createHash } from 'node:crypto';
import { shared } from '../../kernel/state';
import type { Script } from './types';

/*
 * A script as every client sends it: its text (with the prelude) and SHA1, once per text in a process, and
 * EVALSHA-then-EVAL for the clients whose library does not do it by itself.
 */

const scripts = shared('scripts', () => new Map<string, Script>());

/**
 * The first line of every script Floodgate sends. The scripts read TIME and then write; Redis before 5.0
 * (and 5.0-6.x started with `lua-replicate-commands no`) refuses a write after TIME unless the script has
 * switched to effects replication, which this does. From Redis 7.0 (and in Valkey) effects replication is the
 * only kind and the call is a deprecated no-op returning true; should a server drop the function, the guard
 * skips it.
 */
export const SCRIPT_PRELUDE = 'if redis.replicate_commands then redis.replicate_commands() end\n';

/** The Script of `lua` (one object per text in a process), as sent: with SCRIPT_PRELUDE first. */
export function scriptOf(kind: string, lua: string): Script {
  let s = scripts.get(lua);
  if (s === undefined) {
    const text = SCRIPT_PRELUDE + lua;
    const sha = createHash('sha1').update(text).digest('hex');
    s = { lua: text, sha, name: `floodgate_${kind}_${sha.slice(0, 10)}` };
    scripts.set(lua, s);
  }
  return s;
}

/** NOSCRIPT as ioredis and node-redis ("NOSCRIPT No matching script") and GLIDE ("NoScriptError: ...") word it. */
export function isNoScript(err: unknown): boolean {
  return /NOSCRIPT|NoScriptError/.test(err instanceof Error ? err.message : String(err));
}

function args(script: string, keys: string[], argv: (string | number)[]): string[] {
  return [script, String(keys.length), ...keys, ...argv.map(String)];
}

/** EVALSHA, then EVAL on NOSCRIPT: what ioredis's defineCommand does, for the clients that lack it. */
export function evalWithFallback(
  script: Script,
  keys: string[],
  argv: (string | number)[],
  send: (cmd: string[]) => Promise<unknown>,
): Promise<unknown> {
  return send(['EVALSHA', ...args(script.sha, keys, argv)]).catch((err: unknown) => {
    if (!isNoScript(err)) throw err;
    return send(['EVAL', ...args(script.lua, keys, argv)]);
  });
}
