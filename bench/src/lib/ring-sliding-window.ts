/*
 * Floodgate's sliding window on a layout built for speed, for bench/src/script-cost.ts: what the generated
 * script could cost if its state were laid out for the check rather than for the hash of msgpack rings it
 * keeps (docs/design.md, section 5). It decides as Floodgate's sliding window does (a ring of P + 1 bucket
 * counts per rule, so that no window of the rule's length ever holds more than its limit; the same reset
 * and retry, exact to the bucket: bench/test/ring-sliding-window.test.ts replays random checks through both),
 * and keeps what lib/ideal-sliding-window.ts leaves out for the two-window estimate. Per identifier, one GET
 * and one SET ... PX of one string holding every rule's ring as packed doubles: per rule the newest bucket's
 * number, a running total of the counts (so no check sums the ring) and the P + 1 counts, each bucket at a
 * fixed place (its number modulo P + 1, so advancing the ring zeroes the buckets that left instead of moving
 * every count). What it still leaves out, as the ideal does: state a plan shares with another plan's rules,
 * the incarnation, debt (settle, penalty), a TTL never shortened, and a clock that steps back (its buckets
 * ahead of now are read as now's).
 */
import { parseDuration } from '../../../packages/core/src/config/rules';
import type { CORE_LIMITS } from './core-rules';
import { TWIN_FRAME } from './twin-frame';

/** Floodgate's default precision: a window of 10 buckets, a ring of 11 counts. */
const PRECISION = 10;

/**
 * The script for `rules` (CORE_LIMITS' entries, each window a multiple of 10 ms) on however many identifiers
 * KEYS carries (a state key and a block key each), for the cost in ARGV[2] (at most every limit). Its reply,
 * as the ideal's: 1 when admitted (0 when denied, or 0 and the identifier's index when a block key is set),
 * then avail, reset and retry in ms per identifier and rule, after the commit when admitted, at the cost
 * before it when denied (Floodgate's reply without a penalty).
 */
export function ringSlidingWindow(rules: typeof CORE_LIMITS): string {
  const slots = PRECISION + 1;
  const per = slots + 2;
  const n = rules.length;
  const buckets = rules.map((r) => {
    const ms = parseDuration(r.window, 'window');
    if (ms % PRECISION !== 0) throw new Error(`ring sliding window: ${r.window} is not a multiple of ${PRECISION} ms`);
    return ms / PRECISION;
  });
  const format = `<${'d'.repeat(per * n)}`;
  const empty = Array.from({ length: per * n }, () => '0').join(', ');
  const lines = [
    ...TWIN_FRAME,
    'local cost = tonumber(ARGV[2])',
    'local floor = math.floor',
    ...buckets.map((b, r) => `local cur${r} = floor(now / ${b})`),
    'local ok, S = true, {}',
    'for i = 1, nids do',
    "  local raw = redis.call('GET', KEYS[2 * i - 1])",
    '  local v',
    `  if raw then v = { struct.unpack('${format}', raw) } else v = { ${empty} } end`,
  ];
  // Per rule at offset o: v[o] the newest bucket's number, v[o + 1] the total, v[o + 2 + x % slots] bucket x's count.
  rules.forEach((rule, r) => {
    const o = r * per + 1;
    lines.push(
      `  do -- ${rule.limit} per ${rule.window}`,
      `    local cur, last = cur${r}, v[${o}]`,
      // A clock that stepped back counts into the newest bucket.
      `    if cur < last then cur = last end`,
      `    if cur ~= last then`,
      `      if cur - last >= ${slots} then`,
      `        for k = ${o + 1}, ${o + per - 1} do v[k] = 0 end`,
      '      else',
      `        local total = v[${o + 1}]`,
      `        for x = last + 1, cur do local k = ${o + 2} + x % ${slots}; total = total - v[k]; v[k] = 0 end`,
      `        v[${o + 1}] = total`,
      '      end',
      `      v[${o}] = cur`,
      '    end',
      `    if v[${o + 1}] + cost > ${rule.limit} then ok = false end`,
      '  end',
    );
  });
  lines.push('  S[i] = v', 'end', 'local out = { ok and 1 or 0 }');
  lines.push(
    'for i = 1, nids do',
    '  local v = S[i]',
    '  if ok then',
    ...buckets.map((_, r) => {
      const o = r * per + 1;
      return `    local k${r} = ${o + 2} + v[${o}] % ${slots}; v[k${r}] = v[k${r}] + cost; v[${o + 1}] = v[${o + 1}] + cost`;
    }),
    `    redis.call('SET', KEYS[2 * i - 1], struct.pack('${format}', unpack(v)), 'PX', ${Math.max(...buckets.map((b) => b * (slots + 1)))})`,
    '  end',
  );
  buckets.forEach((bucket, r) => {
    const o = r * per + 1;
    const limit = rules[r]!.limit;
    lines.push(
      '  do',
      `    local cur, total = v[${o}], v[${o + 1}]`,
      `    local avail, reset, retry = ${limit} - total, 0, 0`,
      '    if avail < 0 then avail = 0 end',
      // The reset: when the newest bucket with a count leaves (bucket x leaves when bucket x + P + 1 begins);
      // after an admission at a cost, the current one.
      `    if ok and cost > 0 then reset = (cur + ${slots}) * ${bucket} - now`,
      `    else for x = cur, cur - ${PRECISION}, -1 do`,
      `      if v[${o + 2} + x % ${slots}] ~= 0 then reset = (x + ${slots}) * ${bucket} - now break end`,
      '    end end',
      // The retry, when denied at this rule: the oldest buckets leave first.
      '    if not ok then',
      `      if cost > ${limit} then retry = ${bucket * PRECISION}`,
      `      elseif total + cost > ${limit} then`,
      '        local left = total',
      `        for x = cur - ${PRECISION}, cur do`,
      `          left = left - v[${o + 2} + x % ${slots}]`,
      `          if left + cost <= ${limit} then retry = (x + ${slots}) * ${bucket} - now break end`,
      '        end',
      '      end',
      '    end',
      '    out[#out + 1], out[#out + 2], out[#out + 3] = avail, reset, retry',
      '  end',
    );
  });
  lines.push('end', 'return out');
  return `${lines.join('\n')}\n`;
}
