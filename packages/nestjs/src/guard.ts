import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { RateLimitException } from './exception';
import { exchangeOf, type Exchange } from './exchange';
import { FloodgateLimits } from './limits';
import type { Step } from './steps';

/** The limits that already ran for a request (or GraphQL field): the guard on twice (APP_GUARD and @UseGuards) counts it once. */
const ran = new WeakMap<object, Set<Step>>();

function firstTime(key: object, step: Step): boolean {
  const done = ran.get(key);
  if (done === undefined) ran.set(key, new Set([step]));
  else if (done.has(step)) return false;
  else done.add(step);
  return true;
}

/** What a guard's promise settles with: a denial rejects it. */
const rejected = <T>(result: T | RateLimitException): T | Promise<never> =>
  result instanceof RateLimitException ? Promise.reject(result) : result;

/**
 * Runs the limits of the route it guards: the module's, then its class's, then its handler's (each level:
 * concurrency, slow-down, rate limit), less those `@SkipRateLimit()` names. A denial is a thrown
 * RateLimitException, with the headers already on the response. Use it everywhere (`{ provide: APP_GUARD,
 * useClass: FloodgateGuard }`), on a controller or on a handler (`@UseGuards(FloodgateGuard)`).
 */
export class FloodgateGuard implements CanActivate {
  private readonly limits: FloodgateLimits;
  constructor(limits: FloodgateLimits) {
    this.limits = limits;
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const x = exchangeOf(context);
    // Not HTTP, GraphQL or a WebSocket message (a microservice's handler): nothing here identifies a client.
    if (x === undefined) return true;
    // A denial reaches Nest as the rejection it awaits, not a throw: the same to Nest's guard consumer, and a
    // throw is the most expensive thing on a flood's path. What it rejects with is the exchange's answer.
    const refused = (error: unknown): Promise<never> => {
      if (!(error instanceof RateLimitException)) return Promise.reject(error);
      const answer = x.refuse(error);
      return answer instanceof Promise ? answer.then((e: unknown) => Promise.reject(e)) : Promise.reject(answer);
    };
    try {
      const result = this.from(0, this.limits.stepsFor(context.getClass(), context.getHandler()), x);
      // A denial known at once (the block cache's).
      if (result instanceof RateLimitException) return refused(result);
      return result instanceof Promise ? result.catch(refused) : result;
    } catch (error) {
      return refused(error);
    }
  }

  /**
   * Runs the steps in order: synchronously while they answer synchronously (a client the block cache
   * denies), returning the denial of one that refuses at once.
   */
  private from(i: number, steps: Step[], x: Exchange): boolean | RateLimitException | Promise<boolean> {
    for (; i < steps.length; i++) {
      const step = steps[i]!;
      if (!firstTime(x.key, step)) continue;
      const pending = step.run(x);
      if (pending instanceof RateLimitException) return pending;
      if (pending !== undefined) {
        const next = i + 1;
        // A later step's denial known at once must reject: resolved, Nest would take the exception for a yes.
        return pending.then(() => rejected(this.from(next, steps, x)));
      }
    }
    return true;
  }
}

Injectable()(FloodgateGuard);
Inject(FloodgateLimits)(FloodgateGuard, undefined, 0);
