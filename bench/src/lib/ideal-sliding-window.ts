/*
 * The least a sliding-window check decided in Redis can cost, for bench/src/script-cost.ts: a script written
 * by hand for a layout built for speed, against which Floodgate's generated script is read. It does what
 * any check that decides in Redis must, and nothing more:
 *   - the call (the same KEYS and ARGV as Floodgate's, so the call itself costs the same), TIME, and the
 *     block keys' MGET (a lockout or an operator's block can deny before any rule is read);
 *   - per identifier, one GET of one string holding every rule's state, packed as doubles and read with one
 *     struct.unpack (no hash, no field names, no msgpack);
 *   - per rule, the two-window estimate (the previous window's count weighted by how much of it still
 *     overlaps, rounded down as @upstash/ratelimit does, plus the current one's), cheaper than Floodgate's
 *     ring of buckets; avail, reset and retry for the reply;
 *   - when every rule admits, the commit: one struct.pack and one SET ... PX per identifier (no PTTL: the
 *     key is never shared, so its TTL can be set outright).
 * What it leaves out, and Floodgate keeps: state a plan shares with another plan's rules in one hash,
 * the incarnation, debt (settle, penalty), a TTL never shortened, ops other than check, counts per bucket
 * (a retry exact to the bucket). So its cost is a floor no layout of Floodgate's semantics goes under.
 */
import { parseDuration } from '../../../packages/core/src/config/rules';
import type { CORE_LIMITS } from './core-rules';
import { TWIN_FRAME } from './twin-frame';

/**
 * The script for `rules` (CORE_LIMITS' entries) on however many identifiers KEYS carries (a state key and a
 * block key each), for a cost of 1. Its reply: 1 when admitted (0 when denied, or 0 and the identifier's
 * index when a block key is set), then avail, reset and retry in ms per identifier and rule.
 */
export function idealSlidingWindow(rules: typeof CORE_LIMITS): string {
  const n = rules.length;
  const ms = rules.map((r) => parseDuration(r.window, 'window'));
  const ttl = 2 * Math.max(...ms);
  const format = `<${'d'.repeat(3 * n)}`;
  const vars = rules.flatMap((_, r) => [`w${r}`, `p${r}`, `c${r}`]).join(', ');
  const lines = [
    ...TWIN_FRAME,
    'local out, ok, S = { 1 }, true, {}',
    'for i = 1, nids do',
    "  local raw = redis.call('GET', KEYS[2 * i - 1])",
    `  local ${vars}`,
    `  if raw then ${vars} = struct.unpack('${format}', raw) else ${vars} = ${rules.map(() => '0, 0, 0').join(', ')} end`,
  ];
  rules.forEach((rule, r) => {
    const w = ms[r]!;
    lines.push(
      `  do -- ${rule.limit} per ${rule.window}`,
      `    local cw = math.floor(now / ${w})`,
      `    if cw ~= w${r} then if cw == w${r} + 1 then p${r} = c${r} else p${r} = 0 end c${r} = 0 w${r} = cw end`,
      `    local into = now - cw * ${w}`,
      `    local est = math.floor(p${r} * (${w} - into) / ${w}) + c${r}`,
      `    local avail, retry = ${rule.limit} - est - 1, 0`,
      `    if avail < 0 then avail, retry, ok = 0, ${w} - into, false end`,
      `    out[#out + 1], out[#out + 2], out[#out + 3] = avail, ${w} - into, retry`,
      '  end',
    );
  });
  lines.push(
    `  S[i] = { ${vars} }`,
    'end',
    'if ok then',
    '  for i = 1, nids do',
    `    local ${vars} = unpack(S[i])`,
    `    redis.call('SET', KEYS[2 * i - 1], struct.pack('${format}', ${rules.map((_, r) => `w${r}, p${r}, c${r} + 1`).join(', ')}), 'PX', ${ttl})`,
    '  end',
    'else',
    '  out[1] = 0',
    'end',
    'return out',
  );
  return `${lines.join('\n')}\n`;
}
