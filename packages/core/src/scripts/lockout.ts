import type { Reply } from './reply';
import { indexLua, indexTwin } from './block-index';
import type { FrameStorage } from './types';

/*
 * Lockouts that escalate (the `lockout` option, docs/lockouts.md): after `after` denials within `within`,
 * an identifier is blocked for `duration`, then `duration x backoff` for the next lockout, and so on up to
 * `maxDuration`. Decided in the check's own script, after its rules: no extra round trip. The lockout is a
 * block like block()'s (the same key, value `<until>|lockout`), so every limiter of the prefix, the block
 * cache and unblock() see it.
 *
 * A lockout's block enters the prefix's block index (block-index.ts) in the same call: the index key of the
 * block key's slot is at KEYS[3 * NIDS + i].
 *
 * Per identifier, a hash at KEYS[2 * NIDS + i] (after every identifier's state and block key):
 *   n  denials counted in the current counting window
 *   s  when that window started (its first counted denial); it lasts `within`
 *   l  the level: lockouts so far (the next lasts duration x backoff^l, at most maxDuration)
 *   u  until when the hash is needed: the end of the counting window, or `maxDuration` after the last
 *      lockout ends (so the level is forgotten once an identifier has stayed out of trouble that long).
 *      Read as empty from then on, whether or not the key has expired yet: decisions never rest on a TTL
 *      (docs/design.md, invariant 4).
 * What counts as a denial: a consuming check (not a peek, cost > 0) that the rules denied, against each
 * identifier whose own rules denied it and whose kind the lockout's scope names (ARGV[MASKS + NIDS + 1 + i],
 * after the masks and the incarnation, is '1': engine/call-plan.ts). A check an active block denied counts
 * nothing (it never reached the rules).
 */
export interface LockoutSpec {
  readonly after: number;
  readonly withinMs: number;
  readonly durationMs: number;
  readonly backoff: number;
  readonly maxDurationMs: number;
  /** The identifier kinds a lockout may lock (`lockout.scope`); the call plan turns them into ARGV flags. */
  readonly scope: readonly string[];
}

/** Indents every line but the first by `n` spaces (the first follows the template's own indentation). */
function indent(text: string, n: number): string {
  return text.split('\n').join(`\n${' '.repeat(n)}`);
}

/** A number as a Lua literal: integers exactly (ms below 2^53), the backoff factor as JavaScript prints it. */
function lit(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`lockout numbers must be finite; got ${n}`);
  return String(n);
}

/** The block reason a lockout writes (Decision.blockReason). */
export const LOCKOUT_REASON = 'lockout';

/** The lockout's length at level `l` (lockouts so far): duration x backoff^l, at most maxDuration, in whole ms. */
export function lockoutMs(spec: LockoutSpec, level: number): number {
  let d = spec.durationMs;
  for (let k = 0; k < level && d < spec.maxDurationMs; k++) d *= spec.backoff;
  return Math.floor(Math.min(d, spec.maxDurationMs));
}

/**
 * The Lua of the lockout step, run after the check phase (and the commit) with `den[i]` true for each
 * identifier whose rules denied, for those the scope names; the same steps as lockoutTwin below.
 */
export function lockoutLua(spec: LockoutSpec): string {
  const { after, withinMs, durationMs, backoff, maxDurationMs } = spec;
  return `-- the lockout (scripts/lockout.ts): after ${after} denial(s) within ${withinMs} ms, block for ${durationMs} ms x ${backoff}^level, at most ${maxDurationMs} ms
if OP == 'c' and COST > 0 and not ok and not blocked then
  for i = 1, NIDS do
    if den[i] and ARGV[MASKS + NIDS + 1 + i] == '1' then
      local lkey = KEYS[2 * NIDS + i]
      local h = redis.call('HMGET', lkey, 'n', 's', 'l', 'u')
      local n, s, l, u = tonumber(h[1]) or 0, tonumber(h[2]) or NOW, tonumber(h[3]) or 0, tonumber(h[4]) or 0
      if NOW >= u then n, s, l, u = 0, NOW, 0, 0 end
      if n == 0 or NOW - s >= ${lit(withinMs)} or NOW < s then n, s = 0, NOW end
      n = n + 1
      if n >= ${lit(after)} then
        local d = ${lit(durationMs)}
        for k = 1, l do
          if d >= ${lit(maxDurationMs)} then break end
          d = d * ${lit(backoff)}
        end
        if d > ${lit(maxDurationMs)} then d = ${lit(maxDurationMs)} end
        d = floor(d)
        redis.call('SET', KEYS[2 * i], fmt('%d', NOW + d) .. '|${LOCKOUT_REASON}', 'PX', d + PAD)
${indent(indexLua('KEYS[3 * NIDS + i]', 'KEYS[2 * i]', 'NOW + d'), 8)}
        out[2 * i + 2], out[2 * i + 3] = d, '${LOCKOUT_REASON}'
        l, n = l + 1, 0
        if NOW + d + ${lit(maxDurationMs)} > u then u = NOW + d + ${lit(maxDurationMs)} end
      end
      if s + ${lit(withinMs)} > u then u = s + ${lit(withinMs)} end
      redis.call('HSET', lkey, 'n', n, 's', fmt('%d', s), 'l', l, 'u', fmt('%d', u))
      redis.call('PEXPIRE', lkey, u - NOW + PAD)
    end
  end
end`;
}

interface LockoutState {
  n: number;
  s: number;
  l: number;
  u: number;
}

/**
 * The JavaScript twin of lockoutLua over a memory store: `keys` as the script's KEYS, `denied[i]` per
 * identifier (its rules denied and the scope names it), `out` the reply so far (its block entries are
 * written as the Lua writes them).
 */
export function lockoutTwin(
  spec: LockoutSpec,
  storage: FrameStorage,
  keys: readonly string[],
  denied: readonly boolean[],
  out: Reply,
  now: number,
  pad: number,
): void {
  const nIds = denied.length;
  for (let i = 0; i < nIds; i++) {
    if (!denied[i]) continue;
    const lkey = keys[2 * nIds + i]!;
    const stored = storage.get(lkey, now) as LockoutState | undefined;
    let { n, s, l, u } = stored ?? { n: 0, s: now, l: 0, u: 0 };
    if (now >= u) [n, s, l, u] = [0, now, 0, 0];
    if (n === 0 || now - s >= spec.withinMs || now < s) [n, s] = [0, now];
    n++;
    if (n >= spec.after) {
      const d = lockoutMs(spec, l);
      storage.set(keys[2 * i + 1]!, `${now + d}|${LOCKOUT_REASON}`, d + pad, now);
      indexTwin(storage, keys[3 * nIds + i]!, keys[2 * i + 1]!, now + d, now, pad);
      out[2 * i + 3] = d;
      out[2 * i + 4] = LOCKOUT_REASON;
      [l, n] = [l + 1, 0];
      u = Math.max(u, now + d + spec.maxDurationMs);
    }
    u = Math.max(u, s + spec.withinMs);
    storage.set(lkey, { n, s, l, u }, u - now + pad, now);
  }
}
