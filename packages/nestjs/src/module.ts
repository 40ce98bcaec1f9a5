import { Module, type DynamicModule, type FactoryProvider, type ModuleMetadata } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { FLOODGATE_OPTIONS, FloodgateLimits } from './limits';
import type { FloodgateModuleOptions } from './options';
import { UnguardedLimits } from './unguarded';

/** `forRootAsync()`'s options: the options from a factory, with what it injects (your Redis client's provider). */
export interface FloodgateModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Makes the module's options from the providers in `inject`. */
  useFactory: (...args: any[]) => FloodgateModuleOptions | Promise<FloodgateModuleOptions>;
  /** Tokens of the providers `useFactory` takes, in order (e.g. your Redis client's). */
  inject?: FactoryProvider['inject'];
}

/**
 * Floodgate for a Nest application (docs/nestjs.md): import it once, in the root module; it is global, so
 * FloodgateGuard resolves its limits anywhere.
 */
export class FloodgateModule {
  /** `FloodgateModule.forRoot({ redis, limits: { limit: 100, window: '1m' } })`. */
  static forRoot(options: FloodgateModuleOptions): DynamicModule {
    return FloodgateModule.with([{ provide: FLOODGATE_OPTIONS, useValue: options }], []);
  }

  /**
   * The options from a factory, so the Redis client can come from the application's own providers:
   * `FloodgateModule.forRootAsync({ imports: [RedisModule], inject: [REDIS], useFactory: (redis) => ({ redis, limits }) })`.
   */
  static forRootAsync(options: FloodgateModuleAsyncOptions): DynamicModule {
    const { useFactory, inject = [], imports = [] } = options;
    return FloodgateModule.with([{ provide: FLOODGATE_OPTIONS, useFactory, inject }], imports);
  }

  private static with(providers: DynamicModule['providers'] & object, imports: NonNullable<ModuleMetadata['imports']>): DynamicModule {
    return {
      module: FloodgateModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      providers: [...providers, FloodgateLimits, UnguardedLimits],
      exports: [FloodgateLimits],
    };
  }
}

Module({})(FloodgateModule);
