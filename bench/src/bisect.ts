import { execFileSync } from 'node:child_process';
import { resolveOptions, type LimiterOptions, type AlgorithmName } from '@floodgate/core';
import { LUA_PROLOGUE, LUA_MAIN, buildScript } from '../../packages/core/src/algorithms/frame';
const port = '7011';
const LIMITS = [{ limit: 10_000, window: '1s' }, { limit: 10_000, window: '1m' }, { limit: 10_000, window: '1h' }];
const opts = resolveOptions({ algorithm: (process.argv[2] ?? 'sliding-window') as AlgorithmName, limits: LIMITS } as LimiterOptions);
const cli = (...a: string[]) => execFileSync('redis-cli', ['-p', port, ...a], { encoding: 'utf8' });
function run(name: string, lua: string) {
  const sha = cli('SCRIPT', 'LOAD', lua).trim();
  cli('CONFIG', 'RESETSTAT');
  const ruleArgs = opts.rules.flatMap((rule) => [rule.windowMs, rule.limit, opts.algorithm.param(rule)].map(String));
  const keys = [`b:x:{ip:__rand_int__}`, 'b:!b:{ip:__rand_int__}', `b:x:{user:__rand_int__}`, 'b:!b:{user:__rand_int__}'];
  execFileSync('taskset', ['-c', '0', 'redis-benchmark', '-p', port, '-n', '50000', '-c', '50', '-P', '16', '-r', '10000', '--csv',
    'EVALSHA', sha, '4', ...keys, 'c', '1', '0', '', '0', '3', ...ruleArgs, '111', '111'], { encoding: 'utf8' });
  const stat = cli('INFO', 'commandstats').split('\n').find((l) => l.startsWith('cmdstat_evalsha'));
  console.log(name.padEnd(20), stat?.match(/usec_per_call=[\d.]+/)?.[0]);
}
const base = LUA_PROLOGUE + opts.algorithm.lua;
const cut = (marker: string) => base + LUA_MAIN.slice(0, LUA_MAIN.indexOf(marker)) + '\nreturn 1';
run('prologue+algo', base + '\nreturn 1');
run('main-to-commit', cut("if OP == 'c'"));
run('main-to-out', cut('if ok and not blocked then out[2]'));
run('full', buildScript(opts.algorithm.lua));
const noReeval = LUA_MAIN.replace(/    for k, j in ipairs\(js\) do\n      local avail, reset, retry = fg_eval\(st, j, ok and 0 or COST\)\n      evals\[i\]\[k\] = \{ avail, reset, retry \}\n    end\n/, '');
if (noReeval === LUA_MAIN) throw new Error('no replace');
run('no-reeval', base + noReeval + '\nreturn out');
const noSave = LUA_MAIN.replace('fg_save(KEYS[2 * i - 1], st, js)', '');
run('no-save', base + noSave + '\nreturn out');
const noExp = base.replace("redis.call('PEXPIRE', key, ttl + PAD)", '');
run('no-pexpire', noExp + LUA_MAIN + '\nreturn out');
