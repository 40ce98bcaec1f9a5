/*
 * An option set, declared once. Its interface is the TypeScript type, with each option's TSDoc (what an
 * editor shows the user); beside it, a table with one entry per option, which the compiler holds to the
 * interface: a name missing from the table, or one the interface does not have, fails the build. What
 * lists options reads the table, never a list of its own: the names `assertKnownOptions` accepts (and the
 * did-you-mean it offers), what an adapter hands the limiter it makes, what a shared `limiter` refuses
 * beside it, what a route inherits from app-wide options, and each option's simple check.
 */

/** One option: how a value is checked (when that needs no other option) and whether a route inherits it. */
export interface OptionSpec {
  /**
   * Throws a ConfigError naming `option` when `value` (never undefined) is not one this option takes.
   * Absent: the option is checked where it is resolved, because its check reads other options.
   */
  readonly check?: (value: unknown, option: string) => void;
  /**
   * A route's own limiter inherits it from the app-wide options unless it sets its own (Fastify's plugin
   * options): where and how state lives, and how answers look. Which requests count (limits, name,
   * identify, skip, cost...) is each route's own business.
   */
  readonly inherited?: boolean;
  /** Read only by a Redis store: set beside no `redis` client, it would be ignored, so it is a ConfigError. */
  readonly redisOnly?: boolean;
}

/** One entry per option of `T`, no more, no fewer (the compiler checks both). */
export type OptionTable<T> = { readonly [K in keyof Required<T>]: OptionSpec };

/** The names of a table's options, in declaration order. */
export function optionNames<T>(table: OptionTable<T>): readonly (keyof T & string)[] {
  return Object.freeze(Object.keys(table)) as readonly (keyof T & string)[];
}

/** The names of the options a route inherits, from every table given. */
export function inheritedNames(...tables: readonly OptionTable<object>[]): readonly string[] {
  return Object.freeze(
    tables.flatMap((table) =>
      Object.entries(table)
        .filter(([, spec]) => spec.inherited === true)
        .map(([name]) => name),
    ),
  );
}

/** Runs every table entry's `check` over the options set in `input` (own properties only, already read). */
export function checkOptions<T>(table: OptionTable<T>, input: object): void {
  const values = input as Record<string, unknown>;
  for (const [name, spec] of Object.entries(table) as [string, OptionSpec][]) {
    if (spec.check !== undefined && values[name] !== undefined) spec.check(values[name], name);
  }
}
