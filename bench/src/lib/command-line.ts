/*
 * The benchmarks take their settings from the environment (so a long run and a smoke run need no code
 * change); their command line takes only `--help`, which prints those settings. Any other argument is an
 * error rather than ignored: `npm run bench -- --seconds 1` would otherwise run the full benchmark.
 */

/** One environment setting of a benchmark: its variable, its default and what it changes. */
export interface Setting {
  env: string;
  default: string;
  what: string;
}

/** The machine settings every benchmark shares (bench/src/lib/machine.ts). */
export const MACHINE_SETTINGS: Setting[] = [
  { env: 'BENCH_SERVER_CORE', default: '0', what: 'the core the measured process (the HTTP server, or the checking process) is pinned to' },
  { env: 'BENCH_LOAD_CORE', default: '1', what: 'the core redis-server and the load generator are pinned to' },
];

/** The help text of a benchmark: what it measures, its settings, an example. */
export function helpText(command: string, about: string, settings: readonly Setting[], example: string): string {
  const width = Math.max(...settings.map((s) => s.env.length + s.default.length + 3));
  const lines = settings.map((s) => `  ${`${s.env} (${s.default})`.padEnd(width)}  ${s.what}`);
  return [
    `${command}: ${about}`,
    '',
    'Settings are environment variables (default in parentheses):',
    ...lines,
    '',
    `Example: ${example}`,
    '',
  ].join('\n');
}

/**
 * Answers `--help` (or `-h`) with the help text and exits 0; exits 2 naming any other argument. Returns
 * when there are no arguments, and the benchmark runs.
 */
export function commandLine(
  command: string,
  about: string,
  settings: readonly Setting[],
  example: string,
  argv: readonly string[] = process.argv.slice(2),
): void {
  if (argv.length === 0) return;
  const help = helpText(command, about, [...settings, ...MACHINE_SETTINGS], example);
  if (argv.some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(help);
    process.exit(0);
  }
  process.stderr.write(
    `${command}: unknown argument ${argv.map((a) => `'${a}'`).join(' ')}: the settings are environment variables.\n\n${help}`,
  );
  process.exit(2);
}
