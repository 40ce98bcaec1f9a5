import { ConfigError, describeValue } from '@floodgate/core/adapter';
import type { ConcurrencyOptions, FloodgateRequest, RateLimitOptions, SlowDownOptions, StepKind } from './options';

/** A limit a decorator declared on a controller, resolver or gateway class, or on one of its handlers. */
export interface Declared {
  readonly kind: StepKind;
  readonly options: object;
  /** Where it was declared, for messages: `SearchController` or `SearchController.find`. */
  readonly where: string;
}

/** What `@SkipRateLimit()` skips on a target: every limit (the bare form), or those it names. */
export type Skipped = { readonly all: true; readonly where: string } | { readonly names: readonly string[]; readonly where: string };

/*
 * Kept in WeakMaps by class or handler function rather than as reflect-metadata, so the decorators need no
 * metadata polyfill and nothing emitted by the compiler: they work as plain function calls too.
 */
const declared = new WeakMap<object, Declared[]>();
const skipped = new WeakMap<object, Skipped[]>();

type Decorator = <T>(target: object, key?: string | symbol, descriptor?: TypedPropertyDescriptor<T>) => void;

function targetOf(target: object, key: string | symbol | undefined, descriptor: TypedPropertyDescriptor<unknown> | undefined) {
  if (descriptor === undefined) return { at: target, where: (target as { name?: string }).name ?? 'a class' };
  const at = descriptor.value;
  if (typeof at !== 'function')
    throw new ConfigError('decorator', `a Floodgate decorator goes on a class or a method; ${String(key)} is not one`);
  return { at: at as object, where: `${(target as { constructor?: { name?: string } }).constructor?.name ?? 'a class'}.${String(key)}` };
}

function declare(kind: StepKind, options: unknown): Decorator {
  if (typeof options !== 'object' || options === null) {
    const name = { rateLimit: 'RateLimit', slowDown: 'SlowDown', concurrency: 'Concurrency' }[kind];
    throw new ConfigError('options', `@${name}() takes an options object; got ${describeValue(options)}`);
  }
  return (target, key, descriptor) => {
    const { at, where } = targetOf(target, key, descriptor as TypedPropertyDescriptor<unknown> | undefined);
    // Decorators apply bottom-up: prepending keeps the list in the order they are written.
    declared.set(at, [{ kind, options, where }, ...(declared.get(at) ?? [])]);
  };
}

/**
 * A rate limit on a controller (or resolver, or gateway: every handler of it shares the one limit) or on
 * one handler. It adds to the module's limit and to its class's: `@RateLimit({ name: 'search', limits: {
 * limit: 10, window: '1m' } })`. Give each limit its own `name` (the module's is 'default'): that is the
 * name `@SkipRateLimit()` takes, and the key namespace of its counts.
 */
export function RateLimit<Req = FloodgateRequest>(options: RateLimitOptions<Req>): ClassDecorator & MethodDecorator {
  return declare('rateLimit', options) as ClassDecorator & MethodDecorator;
}

/** A slow-down (docs/slow-down.md) on a class or a handler: `@SlowDown({ limits, delayAfter: 5, delayMs: 500 })`. */
export function SlowDown<Req = FloodgateRequest>(options: SlowDownOptions<Req>): ClassDecorator & MethodDecorator {
  return declare('slowDown', options) as ClassDecorator & MethodDecorator;
}

/** A concurrency limit (docs/concurrency.md) on a class or a handler: `@Concurrency({ max: 2 })`. */
export function Concurrency<Req = FloodgateRequest>(options: ConcurrencyOptions<Req>): ClassDecorator & MethodDecorator {
  return declare('concurrency', options) as ClassDecorator & MethodDecorator;
}

/**
 * Leaves limits out of a class or a handler. `@SkipRateLimit('default')` skips the limit named 'default'
 * (the module's, unless it has a `name`), `@SkipRateLimit('default', 'search')` both; a name no limit has is
 * an error when the application starts, so a skip can never silently miss. The bare `@SkipRateLimit()`
 * skips every Floodgate limit: rate limits, slow-downs and concurrency limits.
 */
export function SkipRateLimit(...names: string[]): ClassDecorator & MethodDecorator {
  names.forEach((name, i) => {
    if (typeof name !== 'string' || name === '')
      throw new ConfigError(`SkipRateLimit[${i}]`, `must be the name of a limit, such as 'default'; got ${describeValue(name)}`);
  });
  const decorator: Decorator = (target, key, descriptor) => {
    const { at, where } = targetOf(target, key, descriptor as TypedPropertyDescriptor<unknown> | undefined);
    const entry: Skipped = names.length === 0 ? { all: true, where } : { names, where };
    skipped.set(at, [...(skipped.get(at) ?? []), entry]);
  };
  return decorator as ClassDecorator & MethodDecorator;
}

/** The classes a class inherits from, itself first: a parent's decorators apply to its subclasses. */
function lineage(cls: object): object[] {
  const out: object[] = [];
  for (let c: object | null = cls; c !== null && c !== Function.prototype; c = Object.getPrototypeOf(c) as object | null) out.push(c);
  return out;
}

/** The limits declared on a class (and the classes it extends, the furthest first) or on a handler. */
export function declaredOn(target: object, isClass: boolean): Declared[] {
  if (!isClass) return declared.get(target) ?? [];
  return lineage(target)
    .reverse()
    .flatMap((c) => declared.get(c) ?? []);
}

/** The skips declared on a class (and the classes it extends) or on a handler. */
export function skippedOn(target: object, isClass: boolean): Skipped[] {
  return (isClass ? lineage(target) : [target]).flatMap((c) => skipped.get(c) ?? []);
}
