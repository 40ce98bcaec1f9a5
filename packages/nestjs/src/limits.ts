import { Inject, Injectable, Optional, type OnApplicationBootstrap, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, HttpAdapterHost } from '@nestjs/core';
import { ConfigError, safeLogger, watchPeerAddresses } from '@floodgate/core/adapter';
import { declaredOn, skippedOn, type Declared, type Skipped } from './decorators';
import { classesOf, handlersOf } from './discovered';
import { inherit, splitModuleOptions, type FloodgateModuleOptions, type StepKind } from './options';
import { makeStep, type Step } from './steps';
import { limitsLeftOut } from './skip-overrides';

/** The injection token of the module's options (forRoot's object, or forRootAsync's factory's). */
export const FLOODGATE_OPTIONS = Symbol.for('@floodgate/nestjs.options');

const ORDER: Record<StepKind, number> = { concurrency: 0, slowDown: 1, rateLimit: 2 };
const byKind = (a: Step, b: Step): number => ORDER[a.kind] - ORDER[b.kind];

/**
 * Every limit of the application, made when the module starts: the module's own, and each one a decorator
 * declares on a controller, resolver or gateway the application has (found through Nest's DiscoveryService),
 * so bad options and skips that name no limit fail the start, not a request. The guard asks it which
 * limits a handler runs.
 */
export class FloodgateLimits implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly options: FloodgateModuleOptions;
  private readonly discovery: DiscoveryService;
  private readonly adapterHost: HttpAdapterHost | undefined;
  private inherited: Record<string, unknown> = {};
  private global: Step[] = [];
  /** Steps by the decorator options object they were made from: a class's limit is one limit for all its handlers. */
  private readonly made = new Map<object, Step>();
  private readonly forHandler = new WeakMap<object, Step[]>();

  constructor(options: FloodgateModuleOptions, discovery: DiscoveryService, adapterHost?: HttpAdapterHost) {
    this.options = options;
    this.discovery = discovery;
    this.adapterHost = adapterHost;
  }

  onModuleInit(): void {
    try {
      const split = splitModuleOptions(this.options);
      this.inherited = split.inherited;
      const global: [StepKind, Record<string, unknown> | object | undefined][] = [
        ['concurrency', split.concurrency],
        ['slowDown', split.slowDown],
        ['rateLimit', split.rateLimit],
      ];
      this.global = global.filter(([, o]) => o !== undefined).map(([kind, o]) => makeStep(kind, o as Record<string, unknown>));
      const skips: Skipped[] = [];
      const classes = classesOf(this.discovery);
      for (const cls of classes) {
        for (const d of declaredOn(cls, true)) this.stepOf(d);
        skips.push(...skippedOn(cls, true));
        for (const handler of handlersOf(cls)) {
          for (const d of declaredOn(handler, false)) this.stepOf(d);
          skips.push(...skippedOn(handler, false));
        }
      }
      this.checkSkips(skips);
      this.warnLeftOut(classes);
    } catch (error) {
      void this.onModuleDestroy();
      throw error;
    }
  }

  /** Every connection's address is read on accept, so a client that resets right after its request is still known. */
  onApplicationBootstrap(): void {
    watchPeerAddresses(this.adapterHost?.httpAdapter?.getHttpServer());
  }

  async onModuleDestroy(): Promise<void> {
    const steps = [...this.global, ...this.made.values()];
    this.global = [];
    this.made.clear();
    await Promise.all(steps.map((s) => s.close()));
  }

  /** The limits a handler runs, in order: the module's, its class's, its own; at each level concurrency, slow-down, rate limit. */
  stepsFor(cls: object, handler: object): Step[] {
    const cached = this.forHandler.get(handler);
    if (cached !== undefined) return cached;
    const skips = [...skippedOn(cls, true), ...skippedOn(handler, false)];
    const skippedName = (name: string): boolean => skips.some((s) => 'all' in s || s.names.includes(name));
    const levels = [this.global, declaredOn(cls, true).map((d) => this.stepOf(d)), declaredOn(handler, false).map((d) => this.stepOf(d))];
    const steps = levels.flatMap((level) => [...level].sort(byKind)).filter((s) => !skippedName(s.name));
    this.forHandler.set(handler, steps);
    return steps;
  }

  private stepOf(d: Declared): Step {
    let step = this.made.get(d.options);
    if (step === undefined) {
      step = makeStep(d.kind, inherit(d.kind, this.inherited, d.options));
      this.made.set(d.options, step);
    }
    return step;
  }

  /** A limit declared where a skip at its own level leaves it out runs nowhere: said once, at the start. */
  private warnLeftOut(classes: Set<object>): void {
    if (this.options.warnings === false) return;
    const leftOut = limitsLeftOut(classes, (d) => this.stepOf(d).name);
    if (leftOut.length === 0) return;
    safeLogger(this.options.logger).warn(
      `floodgate: limits declared where a @SkipRateLimit() leaves them out, so they never run there: ${leftOut.join('; ')}. ` +
        "A skip on a class leaves out its handlers' own limits too: name the limits it skips (@SkipRateLimit('default')), or move the skip to the handlers it is for",
    );
  }

  private checkSkips(skips: Skipped[]): void {
    const names = new Set([...this.global, ...this.made.values()].map((s) => s.name));
    for (const skip of skips) {
      if ('all' in skip) continue;
      const unknown = skip.names.find((n) => !names.has(n));
      if (unknown !== undefined) {
        const known = names.size === 0 ? 'there are none' : `the limits are ${[...names].map((n) => `'${n}'`).join(', ')}`;
        throw new ConfigError(
          'SkipRateLimit',
          `'${unknown}' on ${skip.where} names no limit (${known}): a skip that names nothing would skip nothing`,
        );
      }
    }
  }
}

Injectable()(FloodgateLimits);
Inject(FLOODGATE_OPTIONS)(FloodgateLimits, undefined, 0);
Inject(DiscoveryService)(FloodgateLimits, undefined, 1);
Optional()(FloodgateLimits, undefined, 2);
Inject(HttpAdapterHost)(FloodgateLimits, undefined, 2);
