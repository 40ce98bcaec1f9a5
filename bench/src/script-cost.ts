import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createProgram } from '../../packages/core/src/scripts/compiler';
import { ruleArgs } from '../../packages/core/src/scripts/frame';
import { resolveOptions } from '../../packages/core/src/engine/options';
import type { LimiterOptions } from '@floodgate/core';
import { SERVER_CORE, pin, startBenchRedis, type BenchRedis } from './lib/machine';
import { ALL_ALGORITHMS, CORE_LIMITS, PICKED_ALGORITHMS } from './lib/core-rules';
import { envInt, fmt, markdownTable, median } from './lib/stats';
import { commandLine } from './lib/command-line';

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
 * BENCH_ALGOS picks the algorithms (default: all four).
 */
const REPS = envInt('BENCH_REPS', 5);
const CALLS = envInt('BENCH_CALLS', 60_000);
const WRITES = /redis\.call\('(HSET|HINCRBY|HDEL|SET|DEL|PEXPIRE|PEXPIREAT|EXPIRE|ZADD|ZREM|ZREMRANGEBYSCORE)',\s*/g;

/** The generated script's one state read per identifier (`local raw = redis.call(...)`, constant arguments). */
const READ = /local raw = redis\.call\([^\n]*\)/;

function variants(lua: string): [string, string][] {
  const time = "local t = redis.call('TIME')";
  const blocks = `${time}\nlocal b = redis.call('MGET', KEYS[2], KEYS[4])`;
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

function usPerCall(r: BenchRedis, lua: string, args: string[]): number {
  const sha = createHash('sha1').update(lua).digest('hex');
  const loaded = r.cli('SCRIPT', 'LOAD', lua);
  if (loaded !== sha) throw new Error(`SCRIPT LOAD: ${loaded}`);
  r.cli('CONFIG', 'RESETSTAT');
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
      '10000',
      '-q',
      'EVALSHA',
      sha,
      ...args,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const us = /cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(r.cli('INFO', 'commandstats'))?.[1];
  const failed = /cmdstat_evalsha:.*failed_calls=(\d+)/.exec(r.cli('INFO', 'commandstats'))?.[1];
  if (us === undefined || Number(failed) > 0) throw new Error(`the script failed (${failed} failed calls)`);
  return Number(us);
}

async function main(): Promise<void> {
  commandLine(
    'npm run bench:script-cost',
    "where a check's time inside Redis goes, step by step, per algorithm (redis-benchmark sending the limiter's own script)",
    [
      { env: 'BENCH_REPS', default: '5', what: 'runs per variant (the median is reported)' },
      { env: 'BENCH_CALLS', default: '60000', what: 'script calls per run' },
      { env: 'BENCH_ALGOS', default: 'all four', what: 'a comma list of fixed-window, sliding-window, token-bucket, sliding-log' },
    ],
    'BENCH_REPS=1 BENCH_CALLS=10000 npm run bench:script-cost',
  );
  pin(process.pid, SERVER_CORE);
  const r = await startBenchRedis();
  const rows: string[][] = [];
  try {
    for (const algorithm of PICKED_ALGORITHMS) {
      const opts = resolveOptions({ algorithm, limits: CORE_LIMITS } as LimiterOptions);
      const { lua } = createProgram(opts.algorithm, opts.rules);
      const tag = opts.algorithm.tag;
      const mask = '1'.repeat(opts.rules.length);
      const keys = [
        `bench:rb:${tag}:{ip:__rand_int__}`,
        'bench:!b:{ip:__rand_int__}',
        `bench:rb:${tag}:{user:__rand_int__}`,
        'bench:!b:{user:__rand_int__}',
      ];
      const argv = (op: string): string[] => [
        '4',
        ...keys,
        op,
        '1',
        '0',
        '',
        '0',
        ...ruleArgs(opts.rules, opts.algorithm).map(String),
        mask,
        mask,
      ];
      const list = variants(lua);
      const us = new Map<string, number[]>(list.map(([name]) => [name, []]));
      r.cli('FLUSHALL');
      usPerCall(r, lua, argv('c')); // every identifier's state written once: peek and encode read real state
      for (let rep = 0; rep < REPS; rep++)
        for (const [name, script] of list) us.get(name)!.push(usPerCall(r, script, argv(name === 'peek' ? 'p' : 'c')));
      const mid = list.map(([name]) => median(us.get(name)!));
      rows.push([
        algorithm,
        ...mid.map((v, i) => (i === 0 ? fmt(v, 1) : `${fmt(v, 1)} (${v >= mid[i - 1]! ? '+' : '-'}${fmt(Math.abs(v - mid[i - 1]!), 1)})`)),
      ]);
      process.stderr.write(`${algorithm}: ${list.map(([name], i) => `${name} ${fmt(mid[i]!, 1)}`).join(', ')} µs\n`);
    }
  } finally {
    await r.stop();
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
  ];
  const text = [
    `\`npm run bench:script-cost\`, ${new Date().toISOString()}: Redis CPU per check in µs (INFO commandstats usec_per_call), median of ${REPS} runs of ${CALLS} calls per variant; each column adds to the one before (bench/src/script-cost.ts).`,
    '',
    markdownTable(head, rows),
    '',
  ].join('\n');
  // Kept beside the other results (BENCH_ALGOS runs a subset and leaves the file alone).
  if (PICKED_ALGORITHMS.length === ALL_ALGORITHMS.length) writeFileSync(join(__dirname, '..', 'results', 'script-cost.md'), text);
  process.stdout.write(text);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
