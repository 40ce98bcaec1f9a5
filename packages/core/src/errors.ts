/**
 * One small hierarchy with stable codes. A denial is a value (a Decision), never one of these.
 */
export type FloodgateErrorCode =
  | 'ERR_FLOODGATE_CONFIG'
  | 'ERR_FLOODGATE_ARGUMENT'
  | 'ERR_FLOODGATE_STORE';

export class FloodgateError extends Error {
  readonly code: FloodgateErrorCode;

  constructor(code: FloodgateErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Thrown at construction (or by an admin call) when an option is invalid; names the option. */
export class ConfigError extends FloodgateError {
  readonly option: string;

  constructor(option: string, message: string) {
    super('ERR_FLOODGATE_CONFIG', `floodgate: option \`${option}\` ${message}`);
    this.option = option;
  }
}

/** A bad argument to a call such as check(ids, { cost }). */
export class ArgumentError extends FloodgateError {
  constructor(message: string) {
    super('ERR_FLOODGATE_ARGUMENT', `floodgate: ${message}`);
  }
}

export type StoreErrorKind = 'timeout' | 'unavailable' | 'reply' | 'circuit-open';

/** The store could not make a decision: wraps the driver's error (kept as `cause`, never shown to clients). */
export class StoreError extends FloodgateError {
  readonly kind: StoreErrorKind;

  constructor(kind: StoreErrorKind, message: string, cause?: unknown) {
    super('ERR_FLOODGATE_STORE', `floodgate: ${message}`, cause === undefined ? undefined : { cause });
    this.kind = kind;
  }
}

/** Shows a bad value in an error message without dumping a huge or hostile string. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return JSON.stringify(shown);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) {
    return String(value);
  }
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value;
}
