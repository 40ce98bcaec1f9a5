import { DEFAULT_PREFIX } from '@floodgate/core/admin';
import { EXIT, type ExitCode } from './errors';

/*
 * What the command line accepts, in one place: the parser reads the options and each command's arguments
 * from here, and `--help` prints the same table, so a default in the help cannot drift from the code.
 */

export const DEFAULT_URL = 'redis://127.0.0.1:6379';
export const DEFAULTS = { timeoutMs: 3_000, minutes: 5, limit: 10 } as const;

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** How the help shows it: `--for <duration>`. */
  flag: string;
  /** What it does, with its default. */
  text: string;
}

export const OPTIONS: Record<string, OptionSpec> = {
  url: { type: 'string', flag: '--url <url>', text: `Redis, or any node of a Cluster (default: $REDIS_URL, else ${DEFAULT_URL})` },
  prefix: { type: 'string', flag: '--prefix <prefix>', text: `the limiters' key prefix (default: ${DEFAULT_PREFIX})` },
  json: { type: 'boolean', flag: '--json', text: 'print JSON for scripts instead of tables; errors too, on stderr' },
  timeout: { type: 'string', flag: '--timeout <ms>', text: `for connecting and for each command (default: ${DEFAULTS.timeoutMs})` },
  help: { type: 'boolean', short: 'h', flag: '-h, --help', text: 'this help' },
  version: {
    type: 'boolean',
    short: 'v',
    flag: '-v, --version',
    text: 'the versions of @floodgate/cli and of the @floodgate/core it reads keys of',
  },
  for: {
    type: 'string',
    flag: '--for <duration>',
    text: 'how long: 500ms, 30s, 10m, 2h, 1d or milliseconds, up to a year (required)',
  },
  reason: { type: 'string', flag: '--reason <text>', text: 'why, shown by inspect and blocks; at most 256 characters (default: none)' },
  name: { type: 'string', flag: '--name <limiter>', text: 'only this limiter (default: every limiter of the prefix)' },
  minutes: {
    type: 'string',
    flag: '--minutes <n>',
    text: `the last n minutes, 1 to 60, the current one included (default: ${DEFAULTS.minutes})`,
  },
  limit: { type: 'string', flag: '--limit <n>', text: `at most n identifiers, 1 to 1000 (default: ${DEFAULTS.limit})` },
  // script's: a limiter's options, as the command line types them (script.ts).
  algorithm: {
    type: 'string',
    flag: '--algorithm <name>',
    text: 'fixed-window, sliding-window, sliding-log or token-bucket (default: sliding-window)',
  },
  limits: {
    type: 'string',
    flag: '--limits <rules>',
    text: "the rules, comma-separated: '<limit>/<window> [for <kind>] [burst <n>] [precision <n>] [unit <name>]' (script: required)",
  },
  lockout: {
    type: 'string',
    flag: '--lockout <spec>',
    text: 'the lockout option as key=value pairs: after=5,within=15m,duration=1h,scope=ip[+user][,backoff=2,maxDuration=1d]',
  },
  refunds: { type: 'boolean', flag: '--refunds', text: 'refunds: true (the refundable script, which answers undo receipts)' },
  batch: { type: 'boolean', flag: '--batch', text: "the batch script: a turn's checks in one call, on a standalone Redis" },
  split: { type: 'boolean', flag: '--split', text: 'the split script: what each Cluster slot runs for a check spanning slots' },
  settle: { type: 'boolean', flag: '--settle', text: "the settle script: what a reservation's settle runs (give back, charge past)" },
  // override's.
  plan: { type: 'string', flag: '--plan <plan>', text: "override set: one of the limiter's plans (or --limits)" },
  ttl: {
    type: 'string',
    flag: '--ttl <duration>',
    text: 'override set: how long it applies, e.g. 1h, up to a year (default: until deleted)',
  },
};

/** The subcommands of `override`, and whether each takes an identifier. */
export const OVERRIDE_SUBCOMMANDS = { set: true, get: true, delete: true, list: false } as const;

/** The options every command takes. */
export const GENERAL_OPTIONS = ['url', 'prefix', 'json', 'timeout', 'help', 'version'] as const;

export interface CommandSpec {
  /** 1: one identifier; 0: no arguments; 'sub': a subcommand, then an identifier when it takes one (override). */
  positional: 0 | 1 | 'sub';
  /** It never connects: of the general options it takes only --json, --help and --version. */
  offline?: true;
  /** Its own options (the general ones apply too). */
  options: readonly string[];
  /** The arguments after the command's name in the usage line. */
  synopsis: string;
  /** One line for `floodgate --help`. */
  summary: string;
  /** What it does, for `floodgate <command> --help`. */
  description: string;
  /** Its own meaning of exit codes 0 and 1; 2 to 5 are the same for every command. */
  exits: readonly [ExitCode, string][];
  example: string;
}

export const COMMANDS: Record<string, CommandSpec> = {
  inspect: {
    positional: 1,
    options: [],
    synopsis: '<identifier>',
    summary: 'every limiter and rule holding state for it, its block and lockouts',
    description:
      "Every limiter and rule of the prefix holding state for the identifier: the units remaining and the time until\neach rule is full again, as the application's next check would see them. Then its block (manual or lockout)\nand each limiter's lockout state. Reads only: it consumes nothing.",
    exits: [
      [EXIT.ok, 'a limiter holds state for it, or it is blocked'],
      [EXIT.nothing, 'no limiter holds state for it and it is not blocked'],
    ],
    example: 'floodgate inspect ip:203.0.113.7',
  },
  block: {
    positional: 1,
    options: ['for', 'reason'],
    synopsis: '<identifier> --for <duration> [--reason <text>]',
    summary: 'block it in every limiter of the prefix',
    description:
      "Blocks the identifier in every limiter of the prefix, as limiter.block() does. The application's processes\ndeny it at their next check that reaches Redis.",
    exits: [[EXIT.ok, 'blocked']],
    example: 'floodgate block user:42 --for 10m --reason "card testing"',
  },
  unblock: {
    positional: 1,
    options: [],
    synopsis: '<identifier>',
    summary: 'lift its block or lockout',
    description:
      "Lifts the identifier's manual block or lockout, and forgets its lockout escalation, as limiter.unblock()\ndoes. A block an application process cached is re-checked within a second.",
    exits: [
      [EXIT.ok, 'a block was lifted'],
      [EXIT.nothing, 'it was not blocked (its lockout escalation is forgotten anyway)'],
    ],
    example: 'floodgate unblock user:42',
  },
  reset: {
    positional: 1,
    options: ['name'],
    synopsis: '<identifier> [--name <limiter>]',
    summary: 'forget its counts in every limiter, or in one',
    description:
      "Forgets the identifier's counts (and its lockout counting) in every limiter of the prefix, or in the one\n--name gives, as limiter.reset() does. Blocks stay: use unblock.",
    exits: [
      [EXIT.ok, 'counts were forgotten'],
      [EXIT.nothing, 'no limiter held counts for it, or --name names no limiter of the prefix'],
    ],
    example: 'floodgate reset ip:203.0.113.7 --name login',
  },
  blocks: {
    positional: 0,
    options: [],
    synopsis: '',
    summary: 'the identifiers blocked now, with reason and end',
    description: 'Every identifier blocked now, with its reason and end, earliest end first.',
    exits: [
      [EXIT.ok, 'something is blocked'],
      [EXIT.nothing, 'nothing is blocked'],
    ],
    example: 'floodgate blocks --json',
  },
  top: {
    positional: 0,
    options: ['minutes', 'limit'],
    synopsis: '[--minutes <n>] [--limit <n>]',
    summary: `the most-denied identifiers (default: of the last ${DEFAULTS.minutes} minutes, at most ${DEFAULTS.limit})`,
    description: 'The identifiers denied most in the last minutes, from the denial sample the limiters keep.',
    exits: [
      [EXIT.ok, 'denials were recorded'],
      [EXIT.nothing, 'no denial was recorded in those minutes'],
    ],
    example: 'floodgate top --minutes 15',
  },
  limiters: {
    positional: 0,
    options: [],
    synopsis: '',
    summary: 'the limiters registered under the prefix',
    description: 'The limiters registered under the prefix: name, algorithm, rules per plan, lockout.',
    exits: [[EXIT.ok, 'listed']],
    example: 'floodgate limiters --prefix myapp',
  },
  override: {
    positional: 'sub',
    options: ['plan', 'limits', 'ttl', 'name'],
    synopsis: 'set <identifier> (--plan <plan> | --limits <rules>) [--ttl <duration>] | get <identifier> | delete <identifier> | list',
    summary: 'give one identifier another plan or rules of its own, without a deploy',
    description:
      "Sets, shows or deletes per-identifier overrides, as limiter.overrides does: the identifier is checked under\none of the limiter's plans (--plan) or rules of its own (--limits, as script takes them) until --ttl ends or\nthe override is deleted. The application's processes apply a change within the limiter's overrides.refreshMs\n(default 1 s). Only limiters created with `overrides: true` read them. set and delete need --name when the\nprefix has several limiters; get and list read every limiter that reads overrides, or --name's.",
    exits: [
      [EXIT.ok, 'set; deleted; get or list found an override'],
      [EXIT.nothing, 'get or list found none; delete: it had none; --name names no limiter of the prefix'],
    ],
    example: 'floodgate override set user:42 --plan pro --ttl 1h --name api',
  },
  script: {
    positional: 0,
    offline: true,
    options: ['algorithm', 'limits', 'lockout', 'refunds', 'batch', 'split', 'settle'],
    synopsis: '--limits <rules> [--algorithm <name>] [--lockout <spec>] [--refunds] [--batch | --split | --settle]',
    summary: 'print the Lua a limiter with these options sends to Redis (connects to nothing)',
    description:
      "Prints the script a limiter made with these options sends to Redis, exactly as sent: @floodgate/core\ngenerates it from the same options, the same way, so its SHA1 is the one in the limiter's EVALSHA. It\nconnects to nothing. A rule for one kind of identifier is '<limit>/<window> for <kind>' (for: 'user').\nWith --json: the script's sha1, its number of lines and the lua.",
    exits: [[EXIT.ok, 'printed']],
    example: 'floodgate script --algorithm fixed-window --limits "20/10s, 500/1h, 100/1h for user"',
  },
};

/** Exit codes 2 to 5: what they mean for every command. */
export const COMMON_EXITS: readonly [ExitCode, string][] = [
  [EXIT.usage, 'usage: unknown command or option, a missing or invalid argument (before connecting)'],
  [EXIT.connection, 'Redis could not be reached or did not answer within --timeout'],
  [EXIT.notFloodgate, 'no Floodgate limiters under the prefix: a wrong --prefix or --url?'],
  [EXIT.redis, 'Redis answered a command with an error (an ACL, a read-only replica)'],
];

/** The general options a command takes: all of them, or, for one that never connects, those that need no Redis. */
export function generalOptionsOf(spec: CommandSpec): readonly string[] {
  return spec.offline ? GENERAL_OPTIONS.filter((o) => o === 'json' || o === 'help' || o === 'version') : GENERAL_OPTIONS;
}

/** Exit codes 2 to 5 as a command can end with them (one that never connects: 2 only). */
export function commonExitsOf(spec: CommandSpec): readonly [ExitCode, string][] {
  return spec.offline ? COMMON_EXITS.filter(([code]) => code === EXIT.usage) : COMMON_EXITS;
}
