import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import './next-environment';
import { format } from 'node:util';
import { builtApp } from './build-app';

/*
 * The shared suites' Next.js app (test/suite-app): built once (build-app.ts), then served in this process by
 * Next's own production server: `next({ dev: false, dir })`, the request handler of `next start` and of a custom server.
 * Its proxy.js and route handler run here, in the jest process, and answer with what the test set in a
 * globalThis slot (suite-factory.ts), so every option, function-valued ones included, is the test's own.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;
let started: Promise<{ handle: Handler; close(): Promise<void> }> | undefined;

/** Next's production request handler for the built suite app, started once per test file. */
export function nextHandler(): Promise<{ handle: Handler; close(): Promise<void> }> {
  started ??= (async () => {
    const dir = await builtApp(join(__dirname, 'suite-app'));
    holdConsole();
    const { default: next } = await import('next');
    const app = next({ dev: false, dir, quiet: true });
    await app.prepare();
    return { handle: app.getRequestHandler() as Handler, close: () => app.close() };
  })();
  return started;
}

/**
 * Next's server logs what it prints (its start, and every error a proxy or route throws: the suites throw
 * some on purpose, a failing plan lookup or an unknown plan) through the console: in this test process,
 * its lines are held by the test environment (test/quiet-environment.ts) and printed only when the test
 * they came from fails, so a passing run prints none of them.
 */
function holdConsole(): void {
  const hold = (globalThis as Record<symbol, unknown>)[Symbol.for('floodgate.test.hold')] as ((line: string) => void) | undefined;
  if (hold === undefined) return;
  for (const level of ['log', 'info', 'warn', 'error'] as const) {
    // eslint-disable-next-line no-console -- replaced, not written to: Next's lines go to the test's held output
    console[level] = (...args: unknown[]) => hold(`console.${level}: ${format(...args)}`);
  }
}
