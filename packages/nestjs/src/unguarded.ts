import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_GUARD, DiscoveryService } from '@nestjs/core';
import { safeLogger } from '@floodgate/core/adapter';
import { declaredOn } from './decorators';
import { classesOf, handlersOf } from './discovered';
import { FloodgateGuard } from './guard';
import { FLOODGATE_OPTIONS } from './limits';
import { websockets } from './websockets';
import type { FloodgateModuleOptions } from './options';

/*
 * A @RateLimit(), @SlowDown() or @Concurrency() where no FloodgateGuard runs is a limit nothing enforces.
 * When the application starts, every such place is reported in one warning to the module's `logger`.
 * Guarded means: FloodgateGuard as APP_GUARD (which Nest runs for controllers and resolvers, and from Nest
 * 12 for gateways: websockets.ts), or in @UseGuards() on the class or the handler.
 */
const GUARDS_METADATA = '__guards__'; // @nestjs/common's
const GATEWAY_METADATA = 'websockets:is_gateway'; // @nestjs/websockets'

const metadata = (key: string, target: object): unknown =>
  (Reflect as { getMetadata?: (key: string, target: object) => unknown }).getMetadata?.(key, target);

const isFloodgateGuard = (guard: unknown): boolean =>
  guard instanceof FloodgateGuard ||
  (typeof guard === 'function' && (guard === FloodgateGuard || (guard as { prototype?: unknown }).prototype instanceof FloodgateGuard));

const guardedBy = (target: object): boolean => {
  const guards = metadata(GUARDS_METADATA, target);
  return Array.isArray(guards) && guards.some(isFloodgateGuard);
};

export class UnguardedLimits implements OnApplicationBootstrap {
  private readonly options: FloodgateModuleOptions;
  private readonly discovery: DiscoveryService;
  constructor(options: FloodgateModuleOptions, discovery: DiscoveryService) {
    this.options = options;
    this.discovery = discovery;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.options.warnings === false) return;
    const places = await this.unguarded();
    if (places.length === 0) return;
    safeLogger(this.options.logger).warn(
      `floodgate: limits declared where no FloodgateGuard runs, so nothing enforces them: ${places.join(', ')}. ` +
        'Guard them with { provide: APP_GUARD, useClass: FloodgateGuard } or @UseGuards(FloodgateGuard) (on Nest 11 a WebSocket gateway needs @UseGuards: APP_GUARD does not reach it)',
    );
  }

  /** Where limits are declared that no FloodgateGuard runs: `Class` or `Class.handler`. */
  private async unguarded(): Promise<string[]> {
    // APP_GUARD providers are registered under a token of their own, 'APP_GUARD (UUID: ...)'.
    const global = this.discovery
      .getProviders()
      .some((w) => typeof w.token === 'string' && w.token.startsWith(APP_GUARD) && w.instance instanceof FloodgateGuard);
    const classes = classesOf(this.discovery);
    const isGateway = (cls: object): boolean => metadata(GATEWAY_METADATA, cls) === true;
    const reachesGateways = global && [...classes].some(isGateway) && (await websockets()).nest12;
    const places: string[] = [];
    for (const cls of classes) {
      const classGuarded = guardedBy(cls) || (global && (reachesGateways || !isGateway(cls)));
      if (classGuarded) continue;
      const handlers = handlersOf(cls);
      const onClass = declaredOn(cls, true);
      if (onClass.length > 0 && !handlers.some(guardedBy)) places.push((cls as { name?: string }).name ?? onClass[0]!.where);
      for (const handler of handlers) {
        if (!guardedBy(handler)) places.push(...new Set(declaredOn(handler, false).map((d) => d.where)));
      }
    }
    return places;
  }
}

Injectable()(UnguardedLimits);
Inject(FLOODGATE_OPTIONS)(UnguardedLimits, undefined, 0);
Inject(DiscoveryService)(UnguardedLimits, undefined, 1);
