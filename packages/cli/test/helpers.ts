import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../src';

/** The built command line, as `npx floodgate` runs it (`npm test` builds first). */
export const CLI = join(__dirname, '..', 'dist', 'cli.js');

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs `floodgate ...args` in this process, through run() with the output captured (as the bin does, a line
 * per write): the same program as the built bin, and the coverage report sees it. floodgateBin() runs the bin.
 */
export async function floodgate(args: string[], env: Record<string, string | undefined> = {}): Promise<Ran> {
  const started = Date.now();
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: (text) => (stdout += `${text}\n`),
    stderr: (text) => (stderr += `${text}\n`),
    env: { ...process.env, REDIS_URL: undefined, ...env },
  });
  return { code, stdout, stderr, ms: Date.now() - started };
}

/** Runs the built `floodgate` bin in a child process; resolves with its exit code and output. */
export function floodgateBin(args: string[], env: Record<string, string | undefined> = {}): Promise<Ran> {
  if (!existsSync(CLI)) throw new Error('packages/cli is not built: run `npx turbo run build` (npm test does)');
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, REDIS_URL: undefined, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

/** `floodgate ...args --json`, parsed (and the exit code). */
export async function floodgateJson<T = Record<string, unknown>>(args: string[]): Promise<{ code: number | null; json: T }> {
  const ran = await floodgate([...args, '--json']);
  if (ran.stdout === '') throw new Error(`no output from floodgate ${args.join(' ')} (exit ${ran.code}): ${ran.stderr}`);
  return { code: ran.code, json: JSON.parse(ran.stdout) as T };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
