/**
 * What every hand-written sliding window (lib/ideal-sliding-window.ts, lib/ring-sliding-window.ts) does first,
 * as Floodgate's generated scripts do: the clock (ARGV[4] is Floodgate's NOW: '' for Redis's TIME, as the
 * bench sends, or a time in ms, a test's), then one MGET of the block keys (KEYS carries a state key and a
 * block key per identifier), where a set block key answers 0 and the identifier's index. Leaves `now` and
 * `nids` defined.
 */
export const TWIN_FRAME: readonly string[] = [
  'local now',
  "if ARGV[4] == '' then",
  "  local t = redis.call('TIME')",
  '  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)',
  'else',
  '  now = tonumber(ARGV[4])',
  'end',
  'local nids = #KEYS / 2',
  'local bkeys = {}',
  'for i = 1, nids do bkeys[i] = KEYS[2 * i] end',
  "local b = redis.call('MGET', unpack(bkeys))",
  'for i = 1, nids do if b[i] then return { 0, i } end end',
];
