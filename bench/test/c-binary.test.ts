import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * bench/src/lib/c-binary.ts: the bench's C programs are built on first use. Test workers (and a bench run beside
 * them) may build the same source at once: each must end with the whole binary, none with an error.
 */
test('processes that build the same new source at once all get the whole binary', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c-binary-'));
  const source = join(dir, 'answer.c');
  // New text each run: a binary no earlier run built.
  writeFileSync(source, `#include <stdio.h>\n/* ${process.pid} ${Date.now()} */\nint main(void) { puts("42"); return 0; }\n`);
  const script = `process.stdout.write(require(${JSON.stringify(join(__dirname, '../src/lib/c-binary.ts'))}).cBinary(${JSON.stringify(source)}))`;
  const builds = await Promise.allSettled(
    Array.from({ length: 10 }, () =>
      promisify(execFile)(process.execPath, ['-r', join(__dirname, '../../test/ts-register.cjs'), '-e', script], { timeout: 60_000 }),
    ),
  );
  expect(builds.map((b) => (b.status === 'fulfilled' ? 'built' : String(b.reason)))).toEqual(Array(10).fill('built'));
  const paths = new Set(builds.map((b) => (b as PromiseFulfilledResult<{ stdout: string }>).value.stdout));
  expect(paths.size).toBe(1);
  expect(execFileSync([...paths][0]!, { encoding: 'utf8' })).toBe('42\n');
}, 90_000);
