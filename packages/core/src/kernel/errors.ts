/**
 * One small hierarchy with stable codes. A denial is a value (a Decision), never one of these.
 */
export type FloodgateErrorCode = 'ERR_FLOODGATE_CONFIG' | 'ERR_FLOODGATE_ARGUMENT' | 'ERR_FLOODGATE_STORE';

/** What an error of this package carries: its class and every class above it (below Error). */
const BRAND = Symbol.for('@floodgate/core.error');

export class FloodgateError extends Error {
  readonly code: FloodgateErrorCode;

  constructor(code: FloodgateErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    const classes: string[] = [];
    for (let c: unknown = new.target; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c))
      classes.push((c as { name: string }).name);
    Object.defineProperty(this, BRAND, { value: classes });
  }

  /**
   * `err instanceof ConfigError` holds whichever copy of this package made the error: an application that
   * loads @floodgate/core from ESM and an adapter that requires it from CommonJS share one class in effect
   * (docs/design.md, section 3).
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    const classes = typeof value === 'object' && value !== null ? (value as { [BRAND]?: unknown })[BRAND] : undefined;
    return Array.isArray(classes) && classes.includes(this.name);
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

/**
 * timeout: no reply (or no first connection) within the deadline; overload: the deadline passed while Redis
 * kept answering this process's earlier commands (its own backlog); unavailable: no connection; reply: an
 * error reply; circuit-open: not sent, the breaker is open; unsupported: the server answered that it cannot run
 * Floodgate's scripts at all (too old, scripting disabled or refused by an ACL: docs/clients.md, "Servers"),
 * quoted in the message.
 */
export type StoreErrorKind = 'timeout' | 'overload' | 'unavailable' | 'reply' | 'circuit-open' | 'unsupported';

/** The store could not make a decision: wraps the driver's error (kept as `cause`, never shown to clients). */
export class StoreError extends FloodgateError {
  readonly kind: StoreErrorKind;

  constructor(kind: StoreErrorKind, message: string, cause?: unknown) {
    // No stack trace: it would point at a timer or a socket callback, never at the caller, and during an
    // outage every check makes one (capturing it is most of the cost of a failed check).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super('ERR_FLOODGATE_STORE', `floodgate: ${message}`, cause === undefined ? undefined : { cause });
    Error.stackTraceLimit = limit;
    this.kind = kind;
  }
}

/** Shows a bad value in an error message without dumping a huge or hostile string. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    // A URL's credentials never reach an error message (or a log line quoting it).
    const safe = value.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@]*@/, '$1***@');
    const shown = safe.length > 60 ? `${safe.slice(0, 57)}...` : safe;
    return JSON.stringify(shown);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) {
    return String(value);
  }
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value;
}
