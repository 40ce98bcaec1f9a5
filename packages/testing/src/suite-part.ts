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
 * adapters, and in `npm test` on Express. A describe block that holds no contract test is `restDescribe`.
 */

type Part = 'contract' | 'rest';

function runPart(): Part | undefined {
  const part = (globalThis as { FLOODGATE_SUITE_PART?: string }).FLOODGATE_SUITE_PART;
  if (part === undefined || part === 'contract' || part === 'rest') return part;
  throw new Error(`FLOODGATE_SUITE_PART is ${JSON.stringify(part)}; 'contract', 'rest' or unset`);
}

/** Whether declarations of `part` register in this run. */
function registers(part: Part): boolean {
  const running = runPart();
  return running === undefined || running === part;
}

/** jest's `declare` (`test` or `describe`), registering only in `part`'s runs (`.each` included). */
function onlyIn<T extends jest.It | jest.Describe>(part: Part, declare: () => T): T {
  const only = ((...args: unknown[]) => {
    if (registers(part)) (declare() as (...a: unknown[]) => void)(...args);
  }) as T;
  only.each = ((...table: unknown[]) =>
    (...args: unknown[]) => {
      if (registers(part)) (declare().each as (...t: unknown[]) => (...a: unknown[]) => void)(...table)(...args);
    }) as T['each'];
  return only;
}

/** A test of a shared suite's contract subset: run on every adapter in `npm test`. */
export const contract: jest.It = onlyIn('contract', () => globalThis.test);

/** A test of a shared suite outside the contract subset: on Express in `npm test`, on the others in `npm run test:all`. */
export const test: jest.It = onlyIn('rest', () => globalThis.test);

/**
 * A describe block of a shared suite that holds no contract test: registered only where the rest runs. In
 * the contract part, jest would refuse its hooks in a block without a test. (A block that holds contract
 * tests is jest's own `describe`, registered in both parts.)
 */
export const restDescribe: jest.Describe = onlyIn('rest', () => globalThis.describe);

/**
 * `declare` (contract, test, restDescribe, describe) where the adapter has what it tests (Capabilities in
 * conformance.ts), else a declaration that registers nothing: a test of a feature the adapter does not offer
 * is not defined for it, never skipped.
 */
export function given<T extends jest.It | jest.Describe>(has: boolean, declare: T): T {
  if (has) return declare;
  const none = (() => undefined) as unknown as T;
  none.each = (() => () => undefined) as unknown as T['each'];
  return none;
}
