import { unknownCommand, type Wanted } from './args';
import { COMMANDS, GENERAL_OPTIONS, OPTIONS, commonExitsOf, generalOptionsOf, type CommandSpec } from './commands';
import type { CliError } from './errors';

/** Two-column lines: `left` padded to the longest (up to `widest`), then `right`; a longer `left` has `right` below it. */
function columns(rows: readonly [string, string][], widest = 40): string {
  const width = Math.min(widest, Math.max(...rows.map(([left]) => left.length))) + 2;
  return rows
    .map(([left, right]) => (left.length > widest ? `  ${left}\n  ${' '.repeat(width)}${right}` : `  ${left.padEnd(width)}${right}`))
    .join('\n');
}

const optionRows = (names: readonly string[]): [string, string][] => names.map((n) => [OPTIONS[n]!.flag, OPTIONS[n]!.text]);

const IDENTIFIERS =
  'The identifier is kind:value, as the application checks it: ip:203.0.113.7, ip:2001:db8::/56, user:42. An\naddress written otherwise (no kind, one IPv6 address, a range) is refused with the identifier it probably\nmeant; one the application really checks as typed goes after --.';

/** `floodgate --help`: every command, the options every command takes, the exit codes. */
export const USAGE = `Usage: floodgate <command> [options]

Commands:
${columns([
  ...Object.entries(COMMANDS).map(([name, c]): [string, string] => [`${name} ${c.synopsis}`.trim(), c.summary]),
  ['help [<command>]', "this help, or a command's"],
])}

Options:
${columns(optionRows(GENERAL_OPTIONS))}

floodgate <command> --help (or floodgate help <command>) shows a command's options, exit codes and an example.

Exit codes: 0 ok, 1 nothing found or nothing to do, 2 usage error, 3 connection error,
4 no Floodgate limiters under the prefix, 5 Redis answered with an error.`;

function render(name: string, c: CommandSpec): string {
  const usage = ['floodgate', name, c.synopsis, '[options]'].filter(Boolean).join(' ');
  const exits = [...c.exits, ...commonExitsOf(c)].map(([code, meaning]): [string, string] => [String(code), meaning]);
  return [
    `Usage: ${usage}`,
    '',
    c.description,
    ...(c.positional === 0 ? [] : ['', IDENTIFIERS]),
    '',
    'Options:',
    columns(optionRows([...c.options, ...generalOptionsOf(c)])),
    '',
    'Exit codes:',
    columns(exits),
    '',
    'Example:',
    `  ${c.example}`,
  ].join('\n');
}

/** `floodgate <command> --help`; undefined for a name that is not a command. */
export function commandHelp(name: string): string | undefined {
  const spec = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  return spec && render(name, spec);
}

/**
 * What `--help`, `-h` or `help [<command>]` asks for: the whole help, a command's, or the usage error of a
 * command that does not exist; undefined when no help was asked.
 */
export function helpFor(wanted: Wanted): string | CliError | undefined {
  const [first, second] = wanted.words;
  if (!wanted.help && first !== 'help') return undefined;
  const topic = first === 'help' ? second : first;
  if (topic === undefined || topic === 'help') return USAGE;
  return commandHelp(topic) ?? unknownCommand(topic);
}
