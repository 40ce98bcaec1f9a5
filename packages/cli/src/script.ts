import { createHash } from 'node:crypto';
import { ConfigError, type AlgorithmName, type LimiterOptions, type RuleInput } from '@floodgate/core';
import { limiterScript } from '@floodgate/core/admin';
import { usage, type Parsed } from './args';
import { EXIT, type ExitCode } from './errors';
import { jsonText } from './format';
import type { Io } from './index';

/*
 * `floodgate script`: the Lua a limiter with these options sends to Redis, printed without connecting.
 * The command line only turns its flags into a limiter's options (`20/10s for user` is { limit: 20,
 * window: '10s', for: 'user' }); @floodgate/core validates them, as createLimiter() would, and makes the
 * script (limiterScript), so what is printed is what a limiter sends, byte for byte.
 */

const RULE_SHAPE = "<limit>/<window> [for <kind>] [burst <n>] [precision <n>] [unit <name>], e.g. '100/1h for user'";
const MODIFIERS = ['for', 'burst', 'precision', 'unit'] as const;
const LOCKOUT_EXAMPLE = 'after=5,within=15m,duration=1h,scope=ip';

/** A value as typed: a whole number as a number (ms, a count), anything else as text for core to judge. */
const valueOf = (text: string): number | string => (/^\d+(\.\d+)?$/.test(text) ? Number(text) : text);

/** `--limits '20/10s, 100/1h for user'` as `limits`; a rule that is not of the shape is a usage error of `command`. */
export function parseLimits(text: string, command = 'script'): { rules: string[]; limits: RuleInput[] } {
  const rules = text.split(',').map((r) => r.trim());
  const limits = rules.map((rule, i) => {
    const at = `--limits rule ${i + 1} ('${rule}')`;
    const [head = '', ...words] = rule.split(/\s+/);
    const slash = head.indexOf('/');
    if (slash <= 0 || slash === head.length - 1) throw usage(`${at} is not a rule: ${RULE_SHAPE}`, command);
    const input: Record<string, number | string> = { limit: valueOf(head.slice(0, slash)), window: valueOf(head.slice(slash + 1)) };
    for (let k = 0; k < words.length; k += 2) {
      const [word, value] = [words[k]!, words[k + 1]];
      if (!(MODIFIERS as readonly string[]).includes(word))
        throw usage(`${at}: '${word}' is not one of ${MODIFIERS.join(', ')}; a rule is ${RULE_SHAPE}`, command);
      if (value === undefined) throw usage(`${at}: '${word}' needs a value; a rule is ${RULE_SHAPE}`, command);
      if (Object.hasOwn(input, word)) throw usage(`${at} gives '${word}' twice`, command);
      input[word] = word === 'for' || word === 'unit' ? value : valueOf(value);
    }
    return input as unknown as RuleInput;
  });
  return { rules, limits };
}

/**
 * `--lockout after=5,within=15m,duration=1h,scope=ip` as `lockout`: its keys and values are core's to check.
 * A list is its items joined by '+' (scope=ip+user is scope: ['ip', 'user']).
 */
function parseLockout(text: string): LimiterOptions['lockout'] {
  const lockout: Record<string, number | string | string[]> = {};
  for (const pair of text.split(',').map((p) => p.trim())) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw usage(`--lockout takes key=value pairs such as ${LOCKOUT_EXAMPLE}; got '${pair}'`, 'script');
    const value = pair.slice(eq + 1);
    lockout[pair.slice(0, eq)] = value.includes('+') ? value.split('+') : valueOf(value);
  }
  return lockout as unknown as LimiterOptions['lockout'];
}

/** Core's ConfigError in the command line's words: `limits[1].window` is the second rule of --limits. */
export function fromConfigError(err: ConfigError, rules: readonly string[], command = 'script'): Error {
  const what = err.message.replace(/^floodgate: option `[^`]*` /, '');
  const rule = /^limits\[(\d+)\](?:\.(.+))?$/.exec(err.option);
  if (rule) {
    const n = Number(rule[1]);
    return usage(`--limits rule ${n + 1} ('${rules[n]}'): ${rule[2] ? `${rule[2]} ` : ''}${what}`, command);
  }
  const [option, ...path] = err.option.split('.');
  return usage(`--${option}${path.length > 0 ? ` ${path.join('.')}` : ''} ${what}`, command);
}

/** Prints the script; a usage error (exit 2) for options a limiter would refuse. */
export function script(options: Parsed, io: Io): ExitCode {
  const v = options.values;
  if (typeof v.limits !== 'string' || v.limits.trim() === '')
    throw usage(`script needs --limits <rules>, e.g. --limits '100/1m, 1000/1h'`, 'script');
  if (v.batch === true && v.split === true) throw usage('script prints one script: --batch or --split, not both', 'script');
  const which = (['batch', 'split', 'settle'] as const).filter((k) => v[k] === true);
  if (which.length > 1) throw usage(`script prints one script: --${which[0]} or --settle, not both`, 'script');
  const { rules, limits } = parseLimits(v.limits);
  const limiterOptions: LimiterOptions = {
    limits,
    ...(typeof v.algorithm === 'string' ? { algorithm: v.algorithm as AlgorithmName } : {}),
    ...(typeof v.lockout === 'string' ? { lockout: parseLockout(v.lockout) } : {}),
    ...(v.refunds === true ? { refunds: true } : {}),
  };
  let lua: string;
  try {
    lua = limiterScript(limiterOptions, { script: which[0] ?? 'check' });
  } catch (err) {
    throw err instanceof ConfigError ? fromConfigError(err, rules) : err;
  }
  // The script ends with a newline, and io.stdout writes one.
  const text = lua.replace(/\n$/, '');
  io.stdout(options.json ? jsonText({ sha1: createHash('sha1').update(lua).digest('hex'), lines: text.split('\n').length, lua }) : text);
  return EXIT.ok;
}
