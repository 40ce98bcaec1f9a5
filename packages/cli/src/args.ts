import { isIP } from 'node:net';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ANY_IPV6_KEYING, closestName, DEFAULT_PREFIX, identifierMistake, parseDuration } from '@floodgate/core/admin';
import { COMMANDS, DEFAULT_URL, DEFAULTS, GENERAL_OPTIONS, OPTIONS, OVERRIDE_SUBCOMMANDS, generalOptionsOf } from './commands';
import { CliError, EXIT } from './errors';

/*
 * The command line's arguments, checked before connecting: a usage error never waits for Redis. Its
 * message names what was wrong and, for the usual slips, what was probably meant.
 */

export interface Parsed {
  command: string;
  /** override's: set, get, delete or list ('' for other commands). */
  subcommand: string;
  identifier: string;
  url: string;
  prefix: string;
  json: boolean;
  timeoutMs: number;
  values: Record<string, string | boolean | undefined>;
}

/** What is asked before the arguments are checked: help and --version answer even a broken command line. */
export interface Wanted {
  help: boolean;
  version: boolean;
  json: boolean;
  /** The arguments that are not options or their values, in order (`help`, a command, an identifier). */
  words: string[];
}

/** Looks for --help, --version and --json, and the words, without rejecting anything. */
export function scan(args: readonly string[]): Wanted {
  const wanted: Wanted = { help: false, version: false, json: false, words: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      wanted.words.push(...args.slice(i + 1));
      break;
    }
    if (arg === '--help') wanted.help = true;
    else if (arg === '--version') wanted.version = true;
    else if (arg === '--json') wanted.json = true;
    else if (arg.startsWith('--')) {
      if (!arg.includes('=') && OPTIONS[arg.slice(2)]?.type === 'string') i++;
    } else if (/^-[A-Za-z]+$/.test(arg)) {
      wanted.help ||= arg.includes('h');
      wanted.version ||= arg.includes('v');
    } else wanted.words.push(arg);
  }
  return wanted;
}

/** A usage error (exit 2), pointing to the help of `command` when there is one, or to the whole help. */
export function usage(message: string, command?: string): CliError {
  const help = command !== undefined && Object.hasOwn(COMMANDS, command) ? `floodgate ${command} --help` : 'floodgate --help';
  return new CliError(EXIT.usage, `${message} (see ${help})`);
}

/** A usage error whose message already says what to type instead. */
const mistake = (message: string): CliError => new CliError(EXIT.usage, message);

/** A name close to a mistyped one; a short word gets one edit only (`nope` is not `top`). */
const closest = (word: string, known: readonly string[]): string | undefined => closestName(word, known, word.length <= 4 ? 1 : 2);

/** `unknown command 'x'`, with the command it was probably meant to be. */
export function unknownCommand(word: string): CliError {
  const names = [...Object.keys(COMMANDS), 'help'];
  const close = closest(word, names);
  if (close !== undefined) return usage(`unknown command '${word}'; did you mean '${close}'?`);
  // An identifier where the command goes: `floodgate ip:203.0.113.7`.
  if (word.includes(':') || isIP(word) !== 0) return mistake(`unknown command '${word}'; did you mean 'floodgate inspect ${word}'?`);
  return usage(`unknown command '${word}'`);
}

export function integer(value: string | undefined, option: string, min: number, max: number, fallback: number, command?: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    throw usage(`--${option} must be a whole number from ${min} to ${max}; got '${value}'`, command);
  return n;
}

const PARSE_OPTIONS: ParseArgsConfig['options'] = Object.fromEntries(
  Object.entries(OPTIONS).map(([name, o]) => [name, o.short ? { type: o.type, short: o.short } : { type: o.type }]),
);

/** Node's parse error, with the option that was probably meant when one was mistyped. */
function parseError(err: unknown, command: string | undefined): CliError {
  const e = err as { code?: string; message: string };
  const unknown = /^Unknown option '(-{1,2})([^']*)'/.exec(e.message);
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
    const [, dashes, name] = unknown;
    const known =
      command !== undefined && Object.hasOwn(COMMANDS, command)
        ? [...COMMANDS[command]!.options, ...GENERAL_OPTIONS]
        : Object.keys(OPTIONS);
    const close = dashes === '--' ? closest(name!, known) : undefined;
    return usage(`unknown option '${dashes}${name}'${close ? `; did you mean --${close}?` : ''}`, command);
  }
  return usage(e.message.replace(/\. To specify a positional argument.*$/s, ''), command);
}

/**
 * How the application's checks may key an IPv6 client: by its network (`ipv6Subnet`, 32 to 64, /56 by
 * default), never alone unless it sets `ipv6Subnet: false`, which the registry does not say: such an
 * identifier goes after --.
 */
const KEYINGS = ANY_IPV6_KEYING.filter((k) => k !== false);

/** An identifier naming an address in a form the application's checks do not hold (core's reading): the usage error, with the one meant. */
function addressMistake(identifier: string, command: string): CliError | undefined {
  const found = identifierMistake(identifier, KEYINGS);
  if (found === undefined) return undefined;
  const meant = found.meant === undefined ? '' : `: did you mean ${found.meant}?`;
  const typed = identifier.startsWith('ip:') ? 'the application checks as typed' : 'really has none';
  return mistake(`'${identifier}' ${found.why}${meant} (an identifier that ${typed} goes after --: floodgate ${command} -- ${identifier})`);
}

function checkIdentifier(
  command: string,
  words: readonly string[],
  values: Parsed['values'],
  afterTerminator: boolean,
  helpOf = command,
): string {
  const example = `floodgate ${command} ip:203.0.113.7${command === 'block' ? ' --for 10m' : ''}`;
  if (words.length === 0) throw usage(`${command} needs an identifier (kind:value), e.g. ${example}`, helpOf);
  if (words.length > 1) {
    const [id, extra] = words;
    const got = `${command} takes one identifier; got ${words.length}: ${words.map((w) => `'${w}'`).join(' ')}`;
    if (command === 'block' && values.for === undefined && isDuration(extra!))
      throw mistake(`${got}; did you mean 'floodgate block ${id} --for ${extra}'?`);
    throw usage(`${got} (quote an identifier that holds spaces)`, helpOf);
  }
  const identifier = words[0]!;
  if (identifier === '') throw usage('the identifier is empty', helpOf);
  const wrong = afterTerminator ? undefined : addressMistake(identifier, command);
  if (wrong !== undefined) throw wrong;
  return identifier;
}

/**
 * `override <subcommand> [<identifier>]`: the subcommand, its identifier when it takes one, and the options
 * only `set` takes (--plan or --limits, exactly one; --ttl a duration).
 */
function checkSubcommand(command: string, words: readonly string[], values: Parsed['values'], afterTerminator: boolean): [string, string] {
  const subs = Object.keys(OVERRIDE_SUBCOMMANDS);
  const [sub, ...rest] = words;
  if (sub === undefined)
    throw usage(`${command} needs one of ${subs.join(', ')}, e.g. floodgate ${command} set user:42 --plan pro`, command);
  if (!Object.hasOwn(OVERRIDE_SUBCOMMANDS, sub)) {
    const close = closest(sub, subs);
    throw usage(`unknown ${command} subcommand '${sub}'${close ? `; did you mean '${close}'?` : ` (known: ${subs.join(', ')})`}`, command);
  }
  const identifier = OVERRIDE_SUBCOMMANDS[sub as keyof typeof OVERRIDE_SUBCOMMANDS]
    ? checkIdentifier(`${command} ${sub}`, rest, values, afterTerminator, command)
    : '';
  if (!OVERRIDE_SUBCOMMANDS[sub as keyof typeof OVERRIDE_SUBCOMMANDS] && rest.length > 0) {
    throw usage(`${command} ${sub} takes no identifier; got ${rest.map((w) => `'${w}'`).join(' ')}`, command);
  }
  const given = (['plan', 'limits', 'ttl'] as const).filter((o) => values[o] !== undefined);
  if (sub !== 'set' && given.length > 0) throw usage(`--${given[0]} is an option of '${command} set', not of '${command} ${sub}'`, command);
  if (sub === 'set' && (values.plan === undefined) === (values.limits === undefined)) {
    throw usage(`${command} set needs --plan <plan> or --limits <rules>, one of them`, command);
  }
  if (typeof values.ttl === 'string') {
    try {
      parseDuration(values.ttl, '--ttl');
    } catch (err) {
      throw usage(`--ttl ${(err as Error).message.replace(/^.*?must/s, 'must')}`, command);
    }
  }
  return [sub, identifier];
}

function isDuration(text: string): boolean {
  try {
    parseDuration(text, '--for');
    return true;
  } catch {
    return false;
  }
}

/** The arguments of a command (not help or --version, which scan() found first), or a usage error. */
export function parse(args: string[], env: Record<string, string | undefined>): Parsed {
  const guess = scan(args).words[0];
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true, tokens: true, options: PARSE_OPTIONS });
  } catch (err) {
    throw parseError(err, guess);
  }
  const { positionals, tokens } = parsed;
  const values = parsed.values as Parsed['values'];
  const [command, ...rest] = positionals;
  if (command === undefined) throw usage('no command given');
  const spec = Object.hasOwn(COMMANDS, command) ? COMMANDS[command]! : undefined;
  if (spec === undefined) throw unknownCommand(command);
  for (const [option, value] of Object.entries(values)) {
    if (value === undefined || generalOptionsOf(spec).includes(option) || spec.options.includes(option)) continue;
    if (spec.offline && (GENERAL_OPTIONS as readonly string[]).includes(option))
      throw usage(`${command} has no option --${option}: it connects to nothing`, command);
    const owners = Object.keys(COMMANDS).filter((c) => COMMANDS[c]!.options.includes(option));
    const close = closest(option, spec.options);
    const hint = [owners.length > 0 ? `it is an option of ${owners.join(', ')}` : '', close ? `did you mean --${close}?` : ''].filter(
      Boolean,
    );
    throw usage(`${command} has no option --${option}${hint.length > 0 ? `; ${hint.join('; ')}` : ''}`, command);
  }
  let identifier = '';
  let subcommand = '';
  const terminator = tokens.find((t) => t.kind === 'option-terminator')?.index ?? Infinity;
  const last = tokens.filter((t) => t.kind === 'positional').at(-1)?.index ?? -1;
  if (spec.positional === 'sub') {
    [subcommand, identifier] = checkSubcommand(command, rest, values, last > terminator);
  } else if (spec.positional === 1) {
    identifier = checkIdentifier(command, rest, values, last > terminator);
  } else if (rest.length > 0) {
    throw usage(`${command} takes no arguments; got ${rest.map((w) => `'${w}'`).join(' ')}`, command);
  }
  if (command === 'block' && values.for === undefined) throw usage('block needs --for <duration>, e.g. --for 10m', command);
  const prefix = (values.prefix as string | undefined) ?? DEFAULT_PREFIX;
  if (!/^[A-Za-z0-9_.-]{1,32}$/.test(prefix)) throw usage(`--prefix must match [A-Za-z0-9_.-]{1,32}; got '${prefix}'`, command);
  integer(values.minutes as string | undefined, 'minutes', 1, 60, DEFAULTS.minutes, command);
  integer(values.limit as string | undefined, 'limit', 1, 1000, DEFAULTS.limit, command);
  if (typeof values.for === 'string') {
    try {
      parseDuration(values.for, '--for');
    } catch (err) {
      throw usage(`--for ${(err as Error).message.replace(/^.*?must/s, 'must')}`, command);
    }
  }
  return {
    command,
    subcommand,
    identifier,
    url: (values.url as string | undefined) ?? env.REDIS_URL ?? DEFAULT_URL,
    prefix,
    json: values.json === true,
    timeoutMs: integer(values.timeout as string | undefined, 'timeout', 1, 600_000, DEFAULTS.timeoutMs, command),
    values,
  };
}
