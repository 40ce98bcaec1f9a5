import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { resolveOptions, type AlgorithmName, type LimiterOptions } from '@floodgate/core';
import { buildScript, ruleArgs } from '../../packages/core/src/algorithms/frame';

const port = process.env.PORT ?? '7011';
const LIMITS = [{ limit: 10_000, window: '1s' }, { limit: 10_000, window: '1m' }, { limit: 10_000, window: '1h' }];
const cli = (...a: string[]) => execFileSync('redis-cli', ['-p', port, ...a], { encoding: 'utf8' });
for (const algorithm of (process.argv[2] ?? 'fixed-window,sliding-window,sliding-log,token-bucket').split(',') as AlgorithmName[]) {
  const opts = resolveOptions({ algorithm, limits: LIMITS } as LimiterOptions);
  const lua = buildScript(opts.algorithm.lua);
  const sha = createHash('sha1').update(lua).digest('hex');
  cli('SCRIPT', 'LOAD', lua);
  cli('CONFIG', 'RESETSTAT');
  const rargs = ruleArgs(opts.rules, opts.algorithm).map(String);
  const mask = '1'.repeat(opts.rules.length);
  const tag = opts.algorithm.tag;
  const keys = [`b:${tag}:{ip:__rand_int__}`, 'b:!b:{ip:__rand_int__}', `b:${tag}:{user:__rand_int__}`, 'b:!b:{user:__rand_int__}'];
  const out = execFileSync('taskset', ['-c', '0', 'redis-benchmark', '-p', port, '-n', '100000', '-c', '50', '-P', '16', '-r', '10000', '--csv',
    'EVALSHA', sha, '4', ...keys, 'c', '1', '0', '', '0', ...rargs, mask, mask], { encoding: 'utf8' });
  const rps = out.trim().split('\n').pop()!.split(',')[1];
  const stat = cli('INFO', 'commandstats').split('\n').find((l) => l.startsWith('cmdstat_evalsha'));
  console.log(algorithm, 'rps', rps, stat?.match(/usec_per_call=[\d.]+/)?.[0]);
}
