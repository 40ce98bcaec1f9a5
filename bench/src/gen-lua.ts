import { writeFileSync } from 'node:fs';
import { resolveOptions, type LimiterOptions, type AlgorithmName } from '@floodgate/core';
import { buildScript, ruleArgs } from '../../packages/core/src/algorithms/frame';
const LIMITS = [{ limit: 10_000, window: '1s' }, { limit: 10_000, window: '1m' }, { limit: 10_000, window: '1h' }];
for (const a of ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'] as AlgorithmName[]) {
  const opts = resolveOptions({ algorithm: a, limits: LIMITS } as LimiterOptions);
  writeFileSync(`/tmp/lua/${a}.lua`, buildScript(opts.algorithm.lua));
  writeFileSync(`/tmp/lua/${a}.args`, ['c', '1', '0', '', '0', ...ruleArgs(opts.rules, opts.algorithm).map(String), '111', '111'].map((x) => `'${x}'`).join(' '));
}
