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

/**
 * What `read` answers once it equals `expected`, polling every 20 ms for at most `withinMs`; else its last
 * answer (for the test's assertion to show). For state other processes learn in the background (a refresh).
 */
export async function eventually<T>(read: () => Promise<T>, expected: T, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  let got = await read();
  while (got !== expected && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    got = await read();
  }
  return got;
}
