import type { AddressInfo } from 'node:net';
import { startExample, type Running, type StartOptions } from '@floodgate/embedded-redis';
import { createApp } from './app';

export type { Running, StartOptions };

/** Starts the Koa example (store choice, banner and curl lines are shared by the three examples). */
export function start(options: StartOptions = {}): Promise<Running> {
  return startExample('Koa', async (store, port) => {
    const server = createApp(store).listen(port);
    await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
    return {
      url: `http://localhost:${(server.address() as AddressInfo).port}`,
      close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
    };
  }, options);
}
