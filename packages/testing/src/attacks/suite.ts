import type Redis from 'ioredis';
import { createLimiter, type Limiter, type LimiterOptions } from '@floodgate/core';
import { closeClients, connect, uniquePrefix } from '../clients';
import type { AdapterFactory, AppSpec, TestApp } from '../conformance';
import { TEST_DEADLINE } from '../deadline';

/** What an attack suite's tests share: its apps and limiters, closed after each test. */
export interface SuiteResources {
  /** Builds and starts an app of the adapter under test. */
  start(spec: AppSpec): Promise<TestApp>;
  /** A limiter on the suite's Redis under a prefix of its own (`label` names it), for the apps and to read counts. */
  limiter(label: string, options: Omit<LimiterOptions, 'redis' | 'prefix'>): Limiter;
  /** The suite's Redis client (ioredis). */
  redis(): Redis;
}

/**
 * Registers an attack suite's hooks (call it inside its describe): a Redis client made when the suite starts
 * (adversarial()'s afterAll closes every client made before it), apps and limiters closed after each test.
 */
export function suiteResources(factory: AdapterFactory): SuiteResources {
  let redis: Redis | undefined;
  const apps: TestApp[] = [];
  const limiters: Limiter[] = [];
  beforeAll(() => {
    redis = connect();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await Promise.all(limiters.splice(0).map((l) => l.close()));
  });
  afterAll(closeClients);
  return {
    async start(spec) {
      const app = await factory.makeApp(spec);
      apps.push(app);
      return app;
    },
    limiter(label, options) {
      const l = createLimiter({
        ...TEST_DEADLINE,
        ...options,
        redis: redis!,
        prefix: uniquePrefix(`${factory.name}-${label}`),
      } as LimiterOptions);
      limiters.push(l);
      return l;
    },
    redis: () => redis!,
  };
}
