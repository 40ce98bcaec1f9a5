import { ArgumentError, ConfigError, type Override, type OverrideInput } from '@floodgate/core';
import { formatWindow } from '@floodgate/core/admin';
import { usage, type Parsed } from './args';
import { CliError, EXIT, type ExitCode } from './errors';
import type { Floodgate } from './floodgate';
import { human, isoTime, jsonText, safe, table } from './format';
import type { Io } from './index';
import { fromConfigError, parseLimits } from './script';

/*
 * `floodgate override set|get|delete|list` (docs/overrides.md): through the limiters rebuilt from the
 * registry, with `overrides: true` when the application's limiter has it, so the command line writes what
 * limiter.overrides.set() writes, validated by the same code against the limiter's plans and algorithm.
 */

/** An override as the command line prints it, with the limiter it belongs to. */
export interface OverrideRow {
  limiter: string;
  identifier: string;
  plan: string | null;
  limits: Override['limits'] | null;
  expiresAt: string | null;
  expiresAtMs: number | null;
  /** Why the application's limiter does not apply it (core's reading, `Override.ignored`), or null when it does. */
  ignored: string | null;
}

export const rowOf = (limiter: string, o: Override): OverrideRow => ({
  limiter,
  identifier: o.identifier,
  plan: o.plan ?? null,
  limits: o.limits ?? null,
  expiresAt: o.expiresAt === undefined ? null : isoTime(o.expiresAt),
  expiresAtMs: o.expiresAt ?? null,
  ignored: o.ignored ?? null,
});

/** What an override gives, in a few words: `plan pro` or `limits 3/1h, 1000/1d`. */
export function overrideText(o: Pick<OverrideRow, 'plan' | 'limits'>): string {
  if (o.plan !== null) return `plan ${o.plan}`;
  return `limits ${(o.limits ?? []).map((r) => `${r.limit}/${formatWindow(Number(r.window))}${r.for ? ` for ${r.for}` : ''}`).join(', ')}`;
}

/** What the application does with it: `applied`, or `ignored: <why>; checks run as without it`. */
export function appliedText(o: Pick<OverrideRow, 'ignored'>): string {
  return o.ignored === null ? 'applied' : `ignored: ${o.ignored}; checks run as without it`;
}

/** Until when: `until <iso> (in 59m 59s)`, or `no expiry`. */
export function untilText(o: Pick<OverrideRow, 'expiresAtMs'>, now = Date.now()): string {
  return o.expiresAtMs === null ? 'no expiry' : `until ${isoTime(o.expiresAtMs)} (in ${human(o.expiresAtMs - now)})`;
}

/** The limiters a subcommand works on: --name's, else those that read overrides (set and delete: exactly one). */
function targets(fg: Floodgate, options: Parsed): string[] {
  const name = options.values.name as string | undefined;
  const reading = fg.registered.filter((l) => l.description.overrides === true).map((l) => l.name);
  if (name !== undefined) {
    if (!fg.registered.some((l) => l.name === name)) {
      throw new CliError(
        EXIT.nothing,
        `no limiter named '${name}' under prefix '${fg.prefix}' (known: ${fg.registered.map((l) => l.name).join(', ')})`,
      );
    }
    if (!reading.includes(name)) {
      throw usage(
        `limiter '${name}' does not read overrides: the application creates it with \`overrides: true\` to apply them`,
        'override',
      );
    }
    return [name];
  }
  if (reading.length === 0) {
    throw usage(`no limiter under prefix '${fg.prefix}' reads overrides (the option \`overrides: true\`)`, 'override');
  }
  if (reading.length > 1 && (options.subcommand === 'set' || options.subcommand === 'delete')) {
    throw usage(`override ${options.subcommand} needs --name: several limiters read overrides (${reading.join(', ')})`, 'override');
  }
  return reading;
}

/** The override to set, from --plan or --limits (core checks it against the limiter's plans and algorithm). */
function inputOf(options: Parsed): { input: OverrideInput; rules: string[] } {
  const { plan, limits } = options.values;
  if (typeof plan === 'string') return { input: { plan }, rules: [] };
  const parsed = parseLimits(String(limits), 'override');
  return { input: { limits: parsed.limits }, rules: parsed.rules };
}

export async function override(fg: Floodgate, options: Parsed, io: Io): Promise<ExitCode> {
  const names = targets(fg, options);
  const id = options.identifier;
  const out = (json: unknown, text: () => string): void => io.stdout(options.json ? jsonText(json) : text());
  switch (options.subcommand) {
    case 'set': {
      const limiter = fg.limiter(names[0]!);
      const { input, rules } = inputOf(options);
      const ttl = options.values.ttl as string | undefined;
      try {
        await limiter.overrides.set(id, input, ttl === undefined ? undefined : { ttl });
      } catch (err) {
        if (err instanceof ConfigError && err.option.startsWith('limits')) throw fromConfigError(err, rules, 'override');
        if (err instanceof ConfigError || err instanceof ArgumentError) throw usage(err.message.replace(/^floodgate: /, ''), 'override');
        throw err;
      }
      const stored = await limiter.overrides.get(id);
      if (stored === undefined) throw new CliError(EXIT.redis, `the override of ${id} was written but is not in force`);
      const row = rowOf(names[0]!, stored);
      out(row, () => safe`override of ${id} in ${row.limiter}: ${overrideText(row)}, ${untilText(row)}`);
      return EXIT.ok;
    }
    case 'delete': {
      const had = await fg.limiter(names[0]!).overrides.delete(id);
      out({ limiter: names[0], identifier: id, deleted: had }, () =>
        had ? safe`deleted the override of ${id} in ${names[0]}` : safe`${id} had no override in ${names[0]}`,
      );
      return had ? EXIT.ok : EXIT.nothing;
    }
    default: {
      const rows: OverrideRow[] = [];
      for (const name of names) {
        const limiter = fg.limiter(name);
        const found = options.subcommand === 'get' ? [await limiter.overrides.get(id)] : await limiter.overrides.list();
        for (const o of found) if (o !== undefined) rows.push(rowOf(name, o));
      }
      const now = Date.now();
      out({ overrides: rows }, () =>
        rows.length === 0
          ? options.subcommand === 'get'
            ? safe`${id} has no override in ${names.join(', ')}`
            : safe`no overrides in ${names.join(', ')}`
          : table(
              ['LIMITER', 'IDENTIFIER', 'OVERRIDE', 'EXPIRES', 'THE APPLICATION'],
              rows.map((r) => [
                r.limiter,
                r.identifier,
                overrideText(r),
                r.expiresAtMs === null ? '-' : `${r.expiresAt} (in ${human(r.expiresAtMs - now)})`,
                appliedText(r),
              ]),
            ),
      );
      return rows.length > 0 ? EXIT.ok : EXIT.nothing;
    }
  }
}
