import type { Algorithm, AlgorithmName } from './types';
import { fixedWindow } from './fixed-window';

export const ALGORITHMS: Record<AlgorithmName, Algorithm> = {
  'fixed-window': fixedWindow,
  // Filled in by the sliding-window, sliding-log and token-bucket issue.
} as Record<AlgorithmName, Algorithm>;

export type { Algorithm, AlgorithmName } from './types';
