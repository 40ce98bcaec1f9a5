import { startExample, type Running, type StartOptions } from '@floodgate/embedded-redis';
import { createApp } from './app';

export type { Running, StartOptions };

/** Starts the Fastify example (store choice, banner and curl lines are shared by the three examples). */
export function start(options: StartOptions = {}): Promise<Running> {
  return startExample(
    'Fastify',
    async (store, port) => {
      const app = await createApp(store);
      const address = await app.listen({ port, host: '127.0.0.1' });
      return { url: address.replace('127.0.0.1', 'localhost'), close: () => app.close() };
    },
    options,
  );
}
