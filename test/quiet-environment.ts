import NodeEnvironment from 'jest-environment-node';
import type { Circus } from '@jest/types';

/*
 * Every test file's environment (jest.config.ts): Node's, quiet when green. A limiter or adapter without a
 * `logger` warns through process.emitWarning (code 'FLOODGATE'): many tests make a store fail on purpose
 * and assert what the limiter decided, not what it logged (those that assert a warning pass a logger, or
 * spy on process.emitWarning, which still sees every call). Such warnings are held for the test that
 * caused them and printed only when it fails, under its name, to explain it; any other warning prints as
 * usual.
 */
/** The global a test file's code holds a line with, until its test fails (then printed) or passes (then dropped). */
const HOLD = Symbol.for('floodgate.test.hold');

type EmitWarning = (warning: string | Error, ...rest: unknown[]) => void;

/** The code of an emitWarning call: emitWarning(warning, { code }) or emitWarning(warning, type, code). */
function codeOf(rest: unknown[]): unknown {
  const [options, code] = rest;
  if (typeof options === 'object' && options !== null) return (options as { code?: unknown }).code;
  return code;
}

export default class QuietEnvironment extends NodeEnvironment {
  private held: string[] = [];

  override async setup(): Promise<void> {
    await super.setup();
    // The test's `process` is this copy of the worker's (jest-util createProcessObject).
    const process = this.global.process as unknown as { emitWarning: EmitWarning };
    const emitWarning = process.emitWarning;
    process.emitWarning = (warning, ...rest) => {
      if (codeOf(rest) === 'FLOODGATE') this.held.push(warning instanceof Error ? warning.message : String(warning));
      else emitWarning.call(process, warning, ...rest);
    };
    // HOLD: what a test file's own code holds the same way (a framework's server that logs the errors a
    // test provokes on purpose, packages/next/test/suite-server.ts): printed only if its test fails.
    (this.global as Record<symbol, unknown>)[HOLD] = (line: string) => void this.held.push(line);
  }

  handleTestEvent(event: Circus.Event): void {
    if (event.name === 'test_start') this.held = [];
    if (event.name !== 'test_done' || event.test.errors.length === 0 || this.held.length === 0) return;
    const names: string[] = [];
    for (let block: Circus.DescribeBlock | undefined = event.test.parent; block && block.parent; block = block.parent)
      names.unshift(block.name);
    const lines = this.held.map((w) => `  ${w}`).join('\n');
    globalThis.process.stderr.write(
      `[FLOODGATE] warnings and held output during the failing test "${[...names, event.test.name].join(' > ')}":\n${lines}\n`,
    );
    this.held = [];
  }
}
