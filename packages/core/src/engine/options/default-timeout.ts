import { ConfigError } from '../../kernel/errors';

/** The longest a check waits for Redis, first connection included, when a limiter sets no `timeoutMs`. */
export const DEFAULT_TIMEOUT_MS = 250;
/** The most `timeoutMs` (or FLOODGATE_TIMEOUT_MS) may be. */
export const MAX_TIMEOUT_MS = 60_000;

/**
 * The `timeoutMs` of a limiter that sets none: 250 ms, or the process's FLOODGATE_TIMEOUT_MS (docs/testing.md:
 * a test run on a busy CI machine, whose first check can outlast 250 ms while its connection opens, and then
 * gets the failure policy's answer instead of Redis's). Read when a limiter is made; a value that is not an
 * integer of milliseconds from 1 to 60000 is a ConfigError naming the variable, never ignored.
 */
export function defaultTimeoutMs(env: string | undefined = process.env.FLOODGATE_TIMEOUT_MS): number {
  if (env === undefined || env === '') return DEFAULT_TIMEOUT_MS;
  const n = Number(env);
  if (!/^\d+$/.test(env) || n < 1 || n > MAX_TIMEOUT_MS) {
    throw new ConfigError(
      'FLOODGATE_TIMEOUT_MS',
      `(the environment variable) must be an integer of milliseconds from 1 to ${MAX_TIMEOUT_MS}; got '${env}'`,
    );
  }
  return n;
}
