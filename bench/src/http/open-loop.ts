import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { cBinary } from '../lib/c-binary';
import { LOAD_CORE } from '../lib/machine';

/*
 * The latency phase's load: open-loop.c, a small C generator that sends requests on a fixed schedule and
 * measures each answer from when its request was due (see the file). Built once per source version with
 * the machine's C compiler (lib/c-binary.ts); run on LOAD_CORE like wrk.
 */
export interface OpenLoopResult {
  /** Requests due during the run (warm-up included) and those measured (due after the warm-up). */
  scheduled: number;
  measured: number;
  seconds: number;
  non2xx: number;
  errors: number;
  /** Requests never answered within 10 s of the run's end. */
  lost: number;
  meanUs: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
}

const SOURCE = join(__dirname, 'open-loop.c');

/** The generator's binary, compiled on first use (lib/c-binary.ts). */
export const openLoopBinary = (): string => cBinary(SOURCE);

export interface OpenLoopLoad {
  port: number;
  /** Requests per second, due on a fixed schedule. */
  rate: number;
  seconds: number;
  /** Seconds sent first and not measured. */
  warmup: number;
  connections: number;
  /** Random client ids out of this many, or 0: every request is client 'hot'. */
  clients: number;
}

export function openLoop(load: OpenLoopLoad): Promise<OpenLoopResult> {
  const args = [
    '-c',
    String(LOAD_CORE),
    openLoopBinary(),
    String(load.port),
    String(Math.round(load.rate)),
    String(load.seconds),
    String(load.warmup),
    String(load.connections),
    String(load.clients),
  ];
  return new Promise((resolve, reject) => {
    execFile('taskset', args, { timeout: (load.seconds + load.warmup + 30) * 1000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`open-loop failed: ${stderr || err.message}`));
      resolve(JSON.parse(stdout.trim()) as OpenLoopResult);
    });
  });
}
