import { ConfigError, describeValue } from '../kernel/errors';
import { assertKnownOptions, ownOptions } from './own-options';

/*
 * The checks an option's value goes through, each throwing a ConfigError that names the option and shows
 * what was given. Every option set (the limiter's, the HTTP layer's, slowDown's, concurrency's) reads its
 * values through these, so one kind of mistake reads the same everywhere.
 */

/** A boolean option (`penalty: 'yes'` is a mistake, never truthy). */
export function checkBoolean(value: unknown, option: string): void {
  if (typeof value !== 'boolean') throw new ConfigError(option, `must be true or false; got ${describeValue(value)}`);
}

/** A function option. */
export function checkFunction(value: unknown, option: string): void {
  if (typeof value !== 'function') throw new ConfigError(option, `must be a function; got ${describeValue(value)}`);
}

/** A function option's value: the function, or undefined when it was not given. */
export function fnOption<T>(value: unknown, option: string): T | undefined {
  if (value !== undefined) checkFunction(value, option);
  return value as T | undefined;
}

/** A check that the value is one of `allowed`. */
export function oneOfCheck(allowed: readonly string[]): (value: unknown, option: string) => void {
  return (value, option) => {
    if (typeof value !== 'string' || !allowed.includes(value)) {
      throw new ConfigError(option, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}; got ${describeValue(value)}`);
    }
  };
}

/** One of `allowed`, or `fallback` when not given. */
export function oneOf<T extends string>(value: unknown, option: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  oneOfCheck(allowed)(value, option);
  return value as T;
}

/** A string matching `re` (`shape` says it in the message), or `fallback` when not given. */
export function pattern(value: unknown, option: string, re: RegExp, shape: string, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && re.test(value)) return value;
  throw new ConfigError(option, `must match ${shape}; got ${describeValue(value)}`);
}

/** An integer from `min` to `max`; `what` ends the message's first part (`of milliseconds`). */
export function checkInteger(value: unknown, option: string, min: number, max: number, what = ''): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
  throw new ConfigError(option, `must be an integer from ${min} to ${max}${what}; got ${describeValue(value)}`);
}

/** An HTTP error status option: an integer from 400 to 599. */
export function checkErrorStatus(value: unknown, option: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 400 || value > 599) {
    throw new ConfigError(option, `must be an integer HTTP error status (400-599); got ${describeValue(value)}`);
  }
}

/**
 * An option that is an object of its own (`blockCache: { max }`): its own properties, each name one of
 * `known` (a mistake names `option.name`). `example` shows the shape in the message for anything else.
 */
export function nested<T extends object>(value: unknown, option: string, known: readonly (keyof T & string)[], example: string): T {
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError(option, `must be an object such as ${example}; got ${describeValue(value)}`);
  }
  assertKnownOptions(value, known, `${option}.`);
  return ownOptions(value as T);
}
