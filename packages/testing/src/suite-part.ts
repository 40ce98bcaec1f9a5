/*
 * The shared suites (conformance, policies, limits, budgets, concurrency, attacks) run whole on Express in
 * `npm test`; on every other adapter they are split in two parts (jest.config.ts, CONTRIBUTING.md "Which
 * tests to run"): the contract subset, what each adapter does its own way (the headers it writes, the 429 it
 * sends, the client it identifies, the response it sees complete, the client that closes), in `npm test`,
 * and the rest in `npm run test:all`. A jest project names the part its files register through the global
 * FLOODGATE_SUITE_PART ('contract' or 'rest'); without it (a file run alone, `npm test -w <package>`) a
 * suite registers every test.
 *
 * A shared suite imports `test` from here, which shadows jest's: a test is of the rest unless it is
 * declared with `contract`. A new test of a shared suite so lands in `npm run test:all` for the other
 * adapters, and in `npm test` on Express.
 */

type Part = 'contract' | 'rest';

function runPart(): Part | undefined {
  const part = (globalThis as { FLOODGATE_SUITE_PART?: string }).FLOODGATE_SUITE_PART;
  if (part === undefined || part === 'contract' || part === 'rest') return part;
  throw new Error(`FLOODGATE_SUITE_PART is ${JSON.stringify(part)}; 'contract', 'rest' or unset`);
}

/** jest's `test` for the tests of `part`; outside it, one that registers nothing (`.each` included). */
function testOf(part: Part): jest.It {
  const registers = (): boolean => {
    const running = runPart();
    return running === undefined || running === part;
  };
  const declare = ((...args: Parameters<jest.It>) => {
    if (registers()) globalThis.test(...args);
  }) as jest.It;
  declare.each = ((...table: unknown[]) =>
    (...args: unknown[]) => {
      if (registers()) (globalThis.test.each as (...t: unknown[]) => (...a: unknown[]) => void)(...table)(...args);
    }) as jest.It['each'];
  return declare;
}

/** A test of a shared suite's contract subset: run on every adapter in `npm test`. */
export const contract: jest.It = testOf('contract');

/** A test of a shared suite outside the contract subset: on Express in `npm test`, on the others in `npm run test:all`. */
export const test: jest.It = testOf('rest');
