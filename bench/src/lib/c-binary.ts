import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/*
 * The bench's small C programs (the latency phase's load generator, the slow Redis): each built once per
 * source version with the machine's C compiler ($CC, else cc) into the temporary folder.
 */

/** The binary of `source` (a .c file), compiled on first use. */
export function cBinary(source: string): string {
  const text = readFileSync(source);
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), 'floodgate-bench');
  const binary = join(dir, `${basename(source, '.c')}-${hash}`);
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const cc = process.env.CC ?? 'cc';
  // Per process: two test workers may build the same source at once, and each renames its own whole file.
  const partial = `${binary}.${process.pid}.tmp`;
  try {
    execFileSync(cc, ['-O2', '-o', partial, source], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() || String(err);
    throw new Error(`the latency phase builds ${basename(source)} with a C compiler (Debian: apt-get install gcc): ${cc} failed: ${why}`);
  }
  renameSync(partial, binary); // whole or absent: a run killed mid-build leaves no half binary
  return binary;
}
