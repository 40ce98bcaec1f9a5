/*
 * Where two limiters' servers differ in CPU per request, by symbol, at a steady closed-loop load: each server
 * (`equal`, one process per variant, a bench Redis of their own) is warmed up, then `perf record`ed while wrk
 * runs against it, round after round in alternating order; each round's two reports are diffed per request
 * (bench/scripts/perf-diff.mjs). Needs `perf` (linux-perf) and wrk. The servers run with --perf-basic-prof, so
 * JavaScript shows by function.
 *   node -r ./test/ts-register.cjs bench/src/perf-servers.ts <framework> <variant A> <variant B> [rounds=3] [seconds=7]
 * PERF_SERVERS_SHAPE picks another shape than `equal` (`hot`: the hand-written 429 against a limiter's denial).
 * Writes the reports to PERF_SERVERS_OUT (a new temporary folder by default) and prints each round's rates and diff.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBenchRedis } from './lib/machine';
import { startServers } from './http/servers';
import { wrk } from './http/load';
import { SHAPE, type ShapeName } from './http/shapes';

const HZ = 5_000;

async function main(): Promise<void> {
  const [framework, a, b, roundsArg = '3', secondsArg = '7'] = process.argv.slice(2);
  if (!framework || !a || !b) throw new Error('usage: perf-servers.ts <framework> <variant A> <variant B> [rounds] [seconds]');
  const shape = (process.env.PERF_SERVERS_SHAPE ?? 'equal') as ShapeName;
  if (!Object.hasOwn(SHAPE, shape)) throw new Error(`PERF_SERVERS_SHAPE: no shape ${shape}`);
  const random = SHAPE[shape].random;
  const rounds = Number(roundsArg);
  const seconds = Number(secondsArg);
  const out = process.env.PERF_SERVERS_OUT ?? mkdtempSync(join(tmpdir(), 'perf-servers-'));
  mkdirSync(out, { recursive: true });
  process.env.BENCH_NODE_FLAGS = `${process.env.BENCH_NODE_FLAGS ?? ''} --perf-basic-prof`.trim();
  const redis = await startBenchRedis();
  const servers = await startServers([a, b].map((variant) => ({ framework, variant, shape, redisUrl: redis.url })));
  try {
    for (let round = 0; round < rounds; round++) {
      const reports: { file: string; requests: number }[] = [];
      for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const server = servers[i]!;
        await wrk(server.port, 3, 50, random);
        const data = join(out, `${round}-${i}.data`);
        const perf = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', String(HZ), '-p', String(server.child.pid), '-o', data], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        // Listened for from the start: a perf that cannot record exits at once, and waiting for an exit that
        // has already happened would wait forever.
        let said = '';
        perf.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
        const exited = new Promise<number | null>((resolve) => perf.once('exit', resolve));
        const recording = (): void => {
          if (perf.exitCode !== null || perf.signalCode !== null)
            throw new Error(
              `perf record exited with ${perf.exitCode ?? perf.signalCode} while it should have been recording: ${said.trim()}`,
            );
        };
        await new Promise((resolve) => setTimeout(resolve, 200)); // perf attached before the load starts
        recording();
        const load = await wrk(server.port, seconds, 50, random);
        recording();
        perf.kill('SIGINT');
        await exited;
        const file = join(out, `${round}-${i}.txt`);
        writeFileSync(
          file,
          execFileSync('perf', ['report', '-i', data, '--sort', 'sym', '-n', '--stdio'], {
            maxBuffer: 1 << 28,
            stdio: ['ignore', 'pipe', 'ignore'],
          }),
        );
        reports[i] = { file, requests: load.requests };
        console.log(`round ${round + 1}: ${[a, b][i]} ${Math.round(load.rps)} requests/s`);
      }
      const diff = execFileSync(process.execPath, [
        join(__dirname, '..', 'scripts', 'perf-diff.mjs'),
        reports[0]!.file,
        String(reports[0]!.requests),
        reports[1]!.file,
        String(reports[1]!.requests),
        String(HZ),
        process.env.PERF_SERVERS_ROWS ?? '25',
      ]);
      console.log(`round ${round + 1}, µs per request, A = ${a}, B = ${b}:\n${diff.toString()}`);
    }
    console.log(`reports in ${out}`);
  } finally {
    for (const s of servers) s.stop();
    await redis.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
