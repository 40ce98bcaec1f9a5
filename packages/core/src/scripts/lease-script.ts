/*
 * The lease scripts (docs/concurrency.md) and their JavaScript twin.
 *
 * One sorted set per identifier: each member is a lease id (unique per lease, see nextLeaseId), its score
 * the time that lease expires (ms since the epoch, by Redis TIME). Members whose expiry has come are
 * removed by the script before it counts, so a process that died holding a lease gives it back by expiry,
 * and a set whose last member expired or was released is deleted by Redis itself (an empty sorted set does
 * not exist). A decision compares scores with the script's now, never whether a key exists: the key's TTL
 * is garbage collection only (docs/design.md, invariant 4).
 */

/** How `now` is read in every lease script: ARGV[n] is '' in production (Redis TIME) or a test clock's ms. */
const NOW_LUA = (argv: number): string => `
local now
if ARGV[${argv}] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[${argv}])
end`;

/**
 * Acquire: all or nothing over the keys given (one Redis, or one Cluster slot).
 * KEYS: the identifiers' sorted sets. ARGV[1] lease id; ARGV[2] max (leases in flight per identifier);
 * ARGV[3] leaseMs; ARGV[4] now in ms ('' = Redis TIME); ARGV[5] TTL padding in ms (0 in production).
 * Reply: { granted (0|1), now, full (1-based index of the first key with no room; 0 when granted), ms until
 * that key's earliest lease expires (0 when granted), then per key its leases in flight: after the grant
 * (this one included), or as found when denied }.
 */
export const ACQUIRE_LUA = `${NOW_LUA(4)}
local id, max, lease, pad = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
local counts, full = {}, 0
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', string.format('%d', now))
  counts[i] = redis.call('ZCARD', KEYS[i])
  if full == 0 and counts[i] >= max then full = i end
end
if full > 0 then
  local first = redis.call('ZRANGE', KEYS[full], 0, 0, 'WITHSCORES')
  return { 0, now, full, tonumber(first[2]) - now, unpack(counts) }
end
local expires = string.format('%d', now + lease)
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], expires, id)
  counts[i] = counts[i] + 1
  -- Never shorten a TTL: a lease of a longer leaseMs (another process's options) may be in the set.
  if redis.call('PTTL', KEYS[i]) < lease + pad then redis.call('PEXPIRE', KEYS[i], lease + pad) end
end
return { 1, now, 0, 0, unpack(counts) }
`;

/**
 * Release: removes the lease id from every key given, and only that member, so a release never frees
 * another request's slot, however late it comes.
 * KEYS: the lease's sorted sets. ARGV[1] lease id; ARGV[2] now in ms ('' = Redis TIME).
 * Reply: 1 when the lease was still held (unexpired) in some key, else 0 (released before, or expired).
 */
export const RELEASE_LUA = `${NOW_LUA(2)}
local held = 0
for i = 1, #KEYS do
  local score = redis.call('ZSCORE', KEYS[i], ARGV[1])
  if score then
    redis.call('ZREM', KEYS[i], ARGV[1])
    if tonumber(score) > now then held = 1 end
  end
end
return held
`;

/** The acquire reply, decoded: the same numbers from the script and from the twin. */
export interface AcquireReply {
  granted: boolean;
  now: number;
  /** 0-based index of the first key with no room, or -1 when granted. */
  full: number;
  /** Ms until that key's earliest lease expires (0 when granted). */
  freesInMs: number;
  /** Per key, its leases in flight (after the grant, or as found). */
  counts: number[];
}

export function decodeAcquire(reply: unknown): AcquireReply {
  const r = reply as number[];
  return { granted: r[0] === 1, now: Number(r[1]), full: Number(r[2]) - 1, freesInMs: Number(r[3]), counts: r.slice(4).map(Number) };
}

/** What the twin reads and writes: per key, lease id -> expiry (ms). */
export interface LeaseSets {
  read(key: string, now: number): Map<string, number> | undefined;
  write(key: string, set: Map<string, number>, now: number): void;
  remove(key: string): void;
}

/** Drops the leases of `set` whose expiry has come (the script's ZREMRANGEBYSCORE -inf now). */
function prune(set: Map<string, number>, now: number): void {
  for (const [id, expiry] of set) if (expiry <= now) set.delete(id);
}

/** ACQUIRE_LUA in JavaScript, over `sets`: the same reply for the same state and now. */
export function acquireTwin(sets: LeaseSets, keys: readonly string[], id: string, max: number, leaseMs: number, now: number): number[] {
  const found: Map<string, number>[] = [];
  let full = 0;
  keys.forEach((key, i) => {
    const set = sets.read(key, now) ?? new Map<string, number>();
    prune(set, now);
    if (set.size === 0) sets.remove(key);
    found.push(set);
    if (full === 0 && set.size >= max) full = i + 1;
  });
  const counts = found.map((s) => s.size);
  if (full > 0) return [0, now, full, Math.min(...found[full - 1]!.values()) - now, ...counts];
  found.forEach((set, i) => {
    set.set(id, now + leaseMs);
    sets.write(keys[i]!, set, now);
  });
  return [1, now, 0, 0, ...counts.map((n) => n + 1)];
}

/** RELEASE_LUA in JavaScript. */
export function releaseTwin(sets: LeaseSets, keys: readonly string[], id: string, now: number): number {
  let held = 0;
  for (const key of keys) {
    const set = sets.read(key, now);
    const expiry = set?.get(id);
    if (set === undefined || expiry === undefined) continue;
    set.delete(id);
    if (set.size === 0) sets.remove(key);
    if (expiry > now) held = 1;
  }
  return held;
}
