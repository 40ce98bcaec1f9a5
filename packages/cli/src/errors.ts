/**
 * The exit codes scripts can rely on (docs/cli.md, "Exit codes"):
 *   0 ok: the command did what it says and found what it looked for
 *   1 nothing: nothing found or nothing to do (no state for the identifier, no blocks, no denials, it was not blocked)
 *   2 usage: unknown command or option, a missing or invalid argument, a URL that is not a Redis URL
 *   3 connection: Redis could not be reached, or did not answer, within --timeout (or refused the login)
 *   4 not Floodgate: no Floodgate registry under the prefix on that Redis (a wrong --prefix or --url)
 *   5 Redis error: Redis answered a command with an error (an ACL that forbids it, a read-only replica)
 */
export const EXIT = { ok: 0, nothing: 1, usage: 2, connection: 3, notFloodgate: 4, redis: 5 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the command line reports in one line (no stack trace) and exits with `code`. */
export class CliError extends Error {
  constructor(
    readonly code: ExitCode,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The name of an exit code, as `--json` errors give it (`usage`, `connection` ...): EXIT's key. */
export function exitName(code: ExitCode): keyof typeof EXIT {
  return (Object.keys(EXIT) as (keyof typeof EXIT)[]).find((k) => EXIT[k] === code)!;
}
