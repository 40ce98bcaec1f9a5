import type { Algorithm, AlgorithmName } from './types';
import { fixedWindow } from './fixed-window';
import { slidingWindow } from './sliding-window';
import { slidingLog } from './sliding-log';
import { tokenBucket } from './token-bucket';

/** Every algorithm by name; the first is the default (see engine/options.ts). */
export const ALGORITHMS: Record<AlgorithmName, Algorithm> = {
  'sliding-window': slidingWindow,
  'fixed-window': fixedWindow,
  'sliding-log': slidingLog,
  'token-bucket': tokenBucket,
};

export type { Algorithm, AlgorithmName } from './types';
