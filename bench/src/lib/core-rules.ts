import type { AlgorithmName } from '@floodgate/core';

/* What the core benchmarks (`bench:core`, `bench:script-cost`) check: every algorithm, on 3 rules. */
export const ALL_ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket'];

/** BENCH_ALGOS=sliding-window,token-bucket runs a subset (for profiling one algorithm). */
export const PICKED_ALGORITHMS: AlgorithmName[] = process.env.BENCH_ALGOS
  ? ALL_ALGORITHMS.filter((a) => process.env.BENCH_ALGOS!.split(',').includes(a))
  : ALL_ALGORITHMS;

/**
 * Limits no client reaches: every check is allowed, so each one reads and writes all 6 pairs (the
 * expensive path). 1,000 is sliding-log's largest allowed limit; the same rules serve every algorithm.
 */
export const CORE_LIMITS = [
  { limit: 1_000, window: '1s' },
  { limit: 1_000, window: '1m' },
  { limit: 1_000, window: '1h' },
];
