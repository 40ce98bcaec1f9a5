import { closeClients } from './clients';

/** Anything a test closes when it is over: an app, a served server, a limiter, a middleware. */
export interface Closable {
  close(): unknown;
}

/**
 * For a test file: registers the hooks that close, after each test, what the returned function was given
 * during it (in parallel), and the shared Redis clients after the last test. Returns what it was given.
 */
export function closeAfterEach(): <T extends Closable>(item: T) => T {
  const items: Closable[] = [];
  afterEach(async () => {
    await Promise.all(items.splice(0).map((item) => item.close()));
  });
  afterAll(closeClients);
  return (item) => {
    items.push(item);
    return item;
  };
}
