import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProgram } from '../../packages/core/src/scripts/compiler';
import { resolveOptions } from '../../packages/core/src/engine/options';
import type { AlgorithmName, LimiterOptions } from '@floodgate/core';
import { SERVER_CORE, pin, startBenchRedis, type BenchRedis } from './lib/machine';
import { ALL_ALGORITHMS, CORE_LIMITS, PICKED_ALGORITHMS } from './lib/core-rules';
import { envInt, fmt, markdownTable, median } from './lib/stats';
import { commandLine } from './lib/command-line';
import { idealSlidingWindow } from './lib/ideal-sliding-window';
import { ringSlidingWindow } from './lib/ring-sliding-window';
import { keyBytes } from './lib/memory';
import Redis from 'ioredis';

/*
 * Where a check's time inside Redis goes (`npm run bench:script-cost`): the script a limiter sends for the
 * `3x2` shape's rules (1 s, 1 min, 1 h; limits nobody reaches) on 2 identifiers, and cut-down copies of
 * it, each sent by redis-benchmark exactly as the limiter sends one check (EVALSHA, the same KEYS and
 * ARGV), Redis alone on its core. INFO commandstats usec_per_call; median of BENCH_REPS (5) runs of each
 * variant, the variants interleaved rep by rep. Each row adds to the one before:
 *   call     an empty script with the same arguments: EVALSHA's own cost (the KEYS and ARGV tables)
 *   time     + redis.call('TIME')
 *   blocks   + one MGET of the identifiers' block keys
 *   reads    + each identifier's state read (the script's own read command, its reply left undecoded)
 *   peek     the whole script with op 'p': + decoding the state and the rules' Lua; no commit
 *   encode   the whole script with every write a no-op (its arguments, the encoded state, still built)
 *   full     the script as sent: + the writes
 * and beside them the script of 1 rule (the 1 h one) on 1 identifier, sent whole and cut to its fixed part
 * (its call, TIME and block MGET), and the floor: the cheapest check a peer sends (FLOOR below), on one key,
 * against which the 1 x 1 is read. For sliding window, also the least such a check can cost
 * (lib/ideal-sliding-window.ts: a hand-written script on a layout built for speed, the two-window estimate),
 * and Floodgate's own ring of buckets on such a layout (lib/ring-sliding-window.ts: a running total and a
 * packed ring), 3 x 2 and 1 x 1 with the same KEYS and ARGV: what any state layout could reach, and what
 * one keeping the ring's guarantee could. Beside each, what an identifier's state takes in Redis after the
 * run (the mean MEMORY USAGE of its key: key name, object and value as Redis encodes them), with 3 rules and
 * with 1: a layout that saves instructions can cost memory.
 * BENCH_ALGOS picks the algorithms (default: all four).
 *
 * BENCH_COUNT=instructions counts what redis-server executes instead of timing it: Redis runs under
 * valgrind's callgrind, and each figure is instructions per call (callgrind's Ir over a run of BENCH_CALLS
 * calls, the run's own redis-benchmark handshake included). On a shared VM a time moves by tens of
 * percent from one run to the next; the count repeats to within a few percent (the calls' identifiers are
 * random), so an A/B of a script change reads in one run. It needs valgrind (Debian: apt-get install
 * valgrind) and runs about 50 times slower, so it makes fewer calls (3,000 on 1,000 identifiers per kind, 3
 * reps).
 */
const COUNT = process.env.BENCH_COUNT ?? 'time';
if (COUNT !== 'time' && COUNT !== 'instructions') throw new Error(`BENCH_COUNT is time or instructions; got ${COUNT}`);
const INSTRUCTIONS = COUNT === 'instructions';
const REPS = envInt('BENCH_REPS', INSTRUCTIONS ? 3 : 5);
const CALLS = envInt('BENCH_CALLS', INSTRUCTIONS ? 3_000 : 60_000);
/** Identifiers per kind: a run calls each about 6 times (3 under callgrind), so most calls meet state a call before wrote. */
const KEYSPACE = INSTRUCTIONS ? 1_000 : 10_000;
const WRITES = /redis\.call\('(HSET|HINCRBY|HDEL|SET|DEL|PEXPIRE|PEXPIREAT|EXPIRE|ZADD|ZREM|ZREMRANGEBYSCORE)',\s*/g;

/** The generated script's one state read per identifier (`local raw = redis.call(...)`, constant arguments). */
const READ = /local raw = redis\.call\([^\n]*\)/;

function variants(lua: string, identifiers: number): [string, string][] {
  const time = "local t = redis.call('TIME')";
  const blockKeys = Array.from({ length: identifiers }, (_, i) => `KEYS[${2 * i + 2}]`).join(', ');
  const blocks = `${time}\nlocal b = redis.call('MGET', ${blockKeys})`;
  const read = READ.exec(lua)?.[0];
  if (read === undefined) throw new Error('script-cost: no state read (local raw = redis.call(...)) in the script');
  return [
    ['call', 'return 1'],
    ['time', `${time}\nreturn 1`],
    ['blocks', `${blocks}\nreturn 1`],
    ['reads', `${blocks}\nfor i = 1, #KEYS / 2 do\n  local key = KEYS[2 * i - 1]\n  ${read}\nend\nreturn 1`],
    ['peek', lua],
    ['encode', `local function noop() end\n${lua.replace(WRITES, 'noop(')}`],
    ['full', lua],
  ];
}

/** The floor: the cheapest check a peer sends, a fixed-window counter on one key (lib/floor.lua says whose). */
const FLOOR = readFileSync(join(__dirname, 'lib', 'floor.lua'), 'utf8');
/** One key per identifier, with the 1 x 1's window (1 h). */
const floorArgs = ['1', 'bench:floor:{user:__rand_int__}', String(3_600_000)];

/** Where callgrind writes its dumps (BENCH_COUNT=instructions): callgrind.out.<n>, one per dump. */
const DUMPS = join(tmpdir(), `floodgate-script-cost-${process.pid}`);

/** The instructions redis-server has executed since the last zeroing: callgrind dumps them, and the dump's totals line says. */
function instructionsSinceZero(r: BenchRedis): number {
  execFileSync('callgrind_control', ['-d', String(r.pid)], { stdio: 'ignore' });
  const last = readdirSync(DUMPS)
    .map((f) => join(DUMPS, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  const totals = last === undefined ? undefined : /^(?:totals|summary):\s+(\d+)/m.exec(readFileSync(last, 'utf8'))?.[1];
  if (totals === undefined) throw new Error(`callgrind wrote no totals into ${DUMPS}`);
  return Number(totals);
}

/** One run of CALLS calls of `lua` with `args`: µs per call (INFO commandstats), or instructions per call. */
function perCall(r: BenchRedis, lua: string, args: string[]): number {
  const sha = createHash('sha1').update(lua).digest('hex');
  const loaded = r.cli('SCRIPT', 'LOAD', lua);
  if (loaded !== sha) throw new Error(`SCRIPT LOAD: ${loaded}`);
  r.cli('CONFIG', 'RESETSTAT');
  if (INSTRUCTIONS) execFileSync('callgrind_control', ['-z', String(r.pid)], { stdio: 'ignore' });
  execFileSync(
    'taskset',
    [
      '-c',
      String(SERVER_CORE),
      'redis-benchmark',
      '-p',
      String(r.port),
      '-n',
      String(CALLS),
      '-c',
      '8',
      '-P',
      '4',
      '-r',
      String(KEYSPACE),
      '-q',
      'EVALSHA',
      sha,
      ...args,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const instructions = INSTRUCTIONS ? instructionsSinceZero(r) / CALLS : undefined;
  const stats = r.cli('INFO', 'commandstats');
  const us = /cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(stats)?.[1];
  const failed = /cmdstat_evalsha:.*failed_calls=(\d+)/.exec(stats)?.[1];
  if (us === undefined || Number(failed) > 0) throw new Error(`the script failed (${failed} failed calls)`);
  return instructions ?? Number(us);
}

/** The mean `MEMORY USAGE` of the keys matching `pattern` (lib/memory.ts): what one identifier's state takes in Redis. */
async function bytesPerKey(redis: Redis, pattern: string): Promise<number> {
  const { keys, bytes } = await keyBytes(redis, pattern);
  if (keys === 0) throw new Error(`script-cost: no state keys match ${pattern}`);
  return bytes / keys;
}

/** The limiter's script for `limits`, and its arguments for `op` with one identifier per entry of `kinds`. */
function scriptOf(algorithm: AlgorithmName, limits: typeof CORE_LIMITS, kinds: readonly string[]) {
  const opts = resolveOptions({ algorithm, limits } as LimiterOptions);
  const { lua } = createProgram(opts.algorithm, opts.rules);
  const tag = opts.algorithm.tag;
  const mask = '1'.repeat(opts.rules.length);
  const keys = kinds.flatMap((kind) => [`bench:rb:${tag}:{${kind}:__rand_int__}`, `bench:!b:{${kind}:__rand_int__}`]);
  const argv = (op: string): string[] => [String(keys.length), ...keys, op, '1', '0', '', '0', ...kinds.map(() => mask)];
  return { lua, argv };
}

/** Sliding windows written by hand, measured beside Floodgate's generated script with the same KEYS and ARGV. */
const TWINS: { name: string; make: (rules: typeof CORE_LIMITS) => string; what: string }[] = [
  {
    name: 'ideal',
    make: idealSlidingWindow,
    what: 'The least a sliding-window check decided in Redis costs (bench/src/lib/ideal-sliding-window.ts: the call, TIME, the block MGET, one GET and one SET ... PX of one packed string per identifier, the two-window estimate per rule; no hash, no shared state, no debt)',
  },
  {
    name: 'ring',
    make: ringSlidingWindow,
    what: "Floodgate's ring of buckets on such a layout (bench/src/lib/ring-sliding-window.ts: the same decisions, resets and retries as Floodgate's sliding window; per rule a running total and the ring's counts packed as doubles in the identifier's one string; no hash, no shared state, no debt)",
  },
];

async function main(): Promise<void> {
  commandLine(
    'npm run bench:script-cost',
    "where a check's time inside Redis goes, step by step, per algorithm (redis-benchmark sending the limiter's own script)",
    [
      { env: 'BENCH_COUNT', default: 'time', what: 'time (µs per call) or instructions (redis-server under callgrind; needs valgrind)' },
      { env: 'BENCH_REPS', default: '5 (instructions 3)', what: 'runs per variant (the median is reported)' },
      { env: 'BENCH_CALLS', default: '60000 (instructions 3000)', what: 'script calls per run' },
      { env: 'BENCH_ALGOS', default: 'all four', what: 'a comma list of fixed-window, sliding-window, token-bucket, sliding-log' },
    ],
    'BENCH_REPS=1 BENCH_CALLS=10000 npm run bench:script-cost',
  );
  pin(process.pid, SERVER_CORE);
  if (INSTRUCTIONS) {
    for (const tool of ['valgrind', 'callgrind_control'])
      try {
        execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
      } catch {
        throw new Error(`BENCH_COUNT=instructions needs ${tool} on the PATH (Debian: apt-get install valgrind)`);
      }
    mkdirSync(DUMPS, { recursive: true });
  }
  const r = await startBenchRedis(
    INSTRUCTIONS ? ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(DUMPS, 'callgrind.out')}`] : [],
    INSTRUCTIONS ? 120_000 : 10_000,
  );
  // For the memory figures only (the checks go through redis-benchmark).
  const client = new Redis(r.url);
  const rows: string[][] = [];
  let floor = 0;
  /** The hand-written sliding windows' 3 x 2 and 1 x 1 (when sliding window runs), by TWINS' names. */
  const twins = new Map<string, { three: number; one: number; bytes: { three: number; one: number } }>();
  const show = (v: number): string => (INSTRUCTIONS ? fmt(v / 1000, 1) : fmt(v, 1));
  try {
    r.cli('FLUSHALL');
    perCall(r, FLOOR, floorArgs);
    floor = median(Array.from({ length: REPS }, () => perCall(r, FLOOR, floorArgs)));
    process.stderr.write(`floor: ${show(floor)}\n`);
    for (const algorithm of PICKED_ALGORITHMS) {
      const { lua, argv } = scriptOf(algorithm, CORE_LIMITS, ['ip', 'user']);
      // The 1 x 1 check's rule is the 3 x 2's longest: its state is live at every call, as the 3 x 2's is (that
      // key lives as long as its 1 h rule needs). With the 1 min rule, a token bucket refilled and its key
      // expired between two calls on one identifier (most of all under callgrind), so that 1 x 1 mostly met no
      // state to decode: a cheaper check than the 3 x 2 it was the measure of.
      const one = scriptOf(algorithm, [CORE_LIMITS[2]!], ['user']);
      const list = variants(lua, 2);
      // The 1 x 1's fixed part: its call, TIME and block MGET (what it costs before its state is read).
      const oneFixed = variants(one.lua, 1).find(([name]) => name === 'blocks')![1];
      const runs = new Map<string, number[]>([...list.map(([name]): [string, number[]] => [name, []]), ['1x1', []], ['1x1 fixed', []]]);
      // The twins' state keys are strings of their own, one layout per twin and rule set: the same arguments, the state keys renamed.
      const twinScripts =
        algorithm === 'sliding-window'
          ? TWINS.map(({ name, make }) => ({
              name,
              three: make(CORE_LIMITS),
              one: make([CORE_LIMITS[2]!]),
              args: (args: string[], rules: number): string[] => args.map((a) => a.replace(/^bench:rb:[^:]+:/, `bench:${name}${rules}:`)),
            }))
          : [];
      for (const t of twinScripts) runs.set(`${t.name} 3x2`, []).set(`${t.name} 1x1`, []);
      r.cli('FLUSHALL');
      // Every identifier's state written once: peek and encode read real state.
      perCall(r, lua, argv('c'));
      perCall(r, one.lua, one.argv('c'));
      for (const t of twinScripts) {
        perCall(r, t.three, t.args(argv('c'), 3));
        perCall(r, t.one, t.args(one.argv('c'), 1));
      }
      for (let rep = 0; rep < REPS; rep++) {
        for (const [name, script] of list) runs.get(name)!.push(perCall(r, script, argv(name === 'peek' ? 'p' : 'c')));
        runs.get('1x1')!.push(perCall(r, one.lua, one.argv('c')));
        runs.get('1x1 fixed')!.push(perCall(r, oneFixed, one.argv('c')));
        for (const t of twinScripts) {
          runs.get(`${t.name} 3x2`)!.push(perCall(r, t.three, t.args(argv('c'), 3)));
          runs.get(`${t.name} 1x1`)!.push(perCall(r, t.one, t.args(one.argv('c'), 1)));
        }
      }
      // What an identifier's state takes in Redis: the 3 x 2's ip keys (only it writes them) hold its 3 rules;
      // the 1 x 1 shares its user keys with the 3 x 2's, so one more run writes its 1 rule under keys of its own.
      perCall(
        r,
        one.lua,
        one.argv('c').map((a) => a.replace(/^bench:rb:/, 'bench:one:')),
      );
      const bytes = { three: await bytesPerKey(client, 'bench:rb:*{ip:*}'), one: await bytesPerKey(client, 'bench:one:*{user:*}') };
      for (const t of twinScripts) {
        const twin = {
          three: median(runs.get(`${t.name} 3x2`)!),
          one: median(runs.get(`${t.name} 1x1`)!),
          bytes: {
            three: await bytesPerKey(client, `bench:${t.name}3:{ip:*}`),
            one: await bytesPerKey(client, `bench:${t.name}1:{user:*}`),
          },
        };
        twins.set(t.name, twin);
        process.stderr.write(`${t.name} sliding window: 3x2 ${show(twin.three)}, 1x1 ${show(twin.one)}\n`);
      }
      const mid = list.map(([name]) => median(runs.get(name)!));
      const single = median(runs.get('1x1')!);
      const singleFixed = median(runs.get('1x1 fixed')!);
      rows.push([
        algorithm,
        ...mid.map((v, i) => (i === 0 ? show(v) : `${show(v)} (${v >= mid[i - 1]! ? '+' : '-'}${show(Math.abs(v - mid[i - 1]!))})`)),
        show(singleFixed),
        show(single),
        `${fmt(mid[mid.length - 1]! / single, 2)}x`,
        `${fmt(single / floor, 2)}x`,
        `${fmt(bytes.three, 0)} B`,
        `${fmt(bytes.one, 0)} B`,
      ]);
      process.stderr.write(
        `${algorithm}: ${list.map(([name], i) => `${name} ${show(mid[i]!)}`).join(', ')}, 1x1 ${show(singleFixed)} fixed, ${show(single)} full\n`,
      );
    }
  } finally {
    client.disconnect();
    await r.stop();
    if (INSTRUCTIONS) rmSync(DUMPS, { recursive: true, force: true });
  }
  const head = [
    'algorithm (3 rules x 2 identifiers)',
    'call',
    '+ TIME',
    '+ block MGET',
    '+ state reads',
    'peek: + decode, rules',
    '+ encode (writes no-ops)',
    '+ writes: full',
    '1 x 1: call, TIME, block MGET',
    '1 x 1: full',
    '3 x 2 / 1 x 1',
    '1 x 1 / floor',
    'state per identifier, 3 rules',
    '1 rule',
  ];
  const text = [
    INSTRUCTIONS
      ? `\`BENCH_COUNT=instructions npm run bench:script-cost\`, ${new Date().toISOString()}: thousands of instructions redis-server executes per check (valgrind's callgrind), median of ${REPS} runs of ${CALLS} calls per variant; each column of 3 x 2 adds to the one before (bench/src/script-cost.ts).`
      : `\`npm run bench:script-cost\`, ${new Date().toISOString()}: Redis CPU per check in µs (INFO commandstats usec_per_call), median of ${REPS} runs of ${CALLS} calls per variant; each column of 3 x 2 adds to the one before (bench/src/script-cost.ts).`,
    '',
    markdownTable(head, rows),
    '',
    `The floor, the cheapest check a peer sends (a fixed-window counter: INCR, PTTL, and PEXPIRE when the key has no TTL yet, in one script call on one key; bench/src/script-cost.ts, FLOOR): ${show(floor)}.`,
    ...TWINS.flatMap(({ name, what }) => {
      const twin = twins.get(name);
      if (twin === undefined) return [];
      return [
        '',
        `${what}: 3 x 2 ${show(twin.three)}, 1 x 1 ${show(twin.one)}; 3 x 2 / 1 x 1 ${fmt(twin.three / twin.one, 2)}x, 1 x 1 / floor ${fmt(twin.one / floor, 2)}x; state per identifier ${fmt(twin.bytes.three, 0)} B with 3 rules, ${fmt(twin.bytes.one, 0)} B with 1.`,
      ];
    }),
    '',
  ].join('\n');
  // Kept beside the other results (BENCH_ALGOS runs a subset and leaves the file alone).
  if (PICKED_ALGORITHMS.length === ALL_ALGORITHMS.length)
    writeFileSync(join(__dirname, '..', 'results', INSTRUCTIONS ? 'script-instructions.md' : 'script-cost.md'), text);
  process.stdout.write(text);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
