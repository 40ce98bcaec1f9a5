import { ConfigError, describeValue, LIMITER_OPTION_KEYS, type LimiterOptions, type RuleInput } from '@floodgate/core/adapter';
import { resolveIpv6Subnet } from '@floodgate/core/adapter';

/** Who a limit counts against: the signed-in user (else the client address), the client address, or your own key. */
export type Identity<Context> = 'user' | 'ip' | ((context: Context) => string | undefined);

/** A rule of a field or type: `limit` selections per `window` (a duration such as '1m'), counted per identity. */
export type FieldRule = Omit<RuleInput, 'for' | 'unit'>;

/** What limits one schema coordinate (`Query.search`, or a type: `Mutation`). */
export interface CoordinateLimits<Context> {
  /** Selections of the field (resolver calls), or of any field of the type, admitted per window. */
  limits?: FieldRule | FieldRule[];
  /** Whose budget they come from (default: the plugin's `identity`). */
  identity?: Identity<Context>;
  /** The field's cost per value it resolves to (on a type: every field of the type). */
  cost?: number;
}

/** Options of `useRateLimit()` and `apolloRateLimit()` (docs/graphql.md). */
export interface GraphqlRateLimitOptions<Context = Record<string, unknown>> extends Omit<
  LimiterOptions,
  'limits' | 'refunds' | 'penalty' | 'lockout' | 'allow' | 'deny' | 'identifierKinds' | 'overrides'
> {
  /**
   * The operation's own rules: `unit` 'requests' (the default: operations) or 'cost' (the operation's cost,
   * reserved at its estimate and settled at its actual cost).
   */
  limits?: RuleInput | RuleInput[];
  /** Limits, identity and cost per schema coordinate (`'Query.search'`, `'Mutation'`), beside the `@rateLimit` directive. */
  fields?: Record<string, CoordinateLimits<Context>>;
  /** The directive read from the schema, `'rateLimit'` by default; false reads none. */
  directive?: string | false;
  /** The highest estimated cost an operation may have: above it, it is refused before it runs (default 10,000). */
  maxCost?: number;
  /** The size assumed for a list whose field has no size argument (default 100). */
  defaultListSize?: number;
  /** The arguments that bound a list's size (default `['first', 'last', 'limit']`). */
  listArguments?: readonly string[];
  /** The cost of a field whose type is an object, interface or union (default 1). */
  objectCost?: number;
  /** The cost of a field whose type is a scalar or enum (default 0). */
  scalarCost?: number;
  /** Whose budget limits come from by default: 'user' (the default: the signed-in user, else the client address), 'ip', or a function. */
  identity?: Identity<Context>;
  /** The signed-in user's id from the context (default: `context.user?.id`). */
  user?: (context: Context) => unknown;
  /**
   * The client address from the context, as your HTTP layer trusts it (default: `context.req.ip` when it is a
   * string, as Express's trust proxy sets it, else the socket's peer address of `context.req`). Never
   * X-Forwarded-For unless your function reads it.
   */
  ip?: (context: Context) => string | undefined;
  /** IPv6 addresses are counted per network of this prefix length (default 56), or each alone with false. */
  ipv6Subnet?: number | false;
}

/** The options as the plugin reads them: validated once, at construction. */
export interface Resolved<Context> {
  readonly operationRules: readonly RuleInput[];
  readonly fields: ReadonlyMap<string, ResolvedCoordinate<Context>>;
  readonly directive: string | false;
  readonly maxCost: number;
  readonly defaultListSize: number;
  readonly listArguments: readonly string[];
  readonly objectCost: number;
  readonly scalarCost: number;
  readonly identity: Identity<Context>;
  readonly user: ((context: Context) => unknown) | undefined;
  readonly ip: ((context: Context) => string | undefined) | undefined;
  readonly ipv6Subnet: number | false;
  /** What goes to createLimiter (redis, name, prefix, algorithm, failure...). */
  readonly limiter: Omit<LimiterOptions, 'limits'>;
}

export interface ResolvedCoordinate<Context> {
  readonly rules: readonly RuleInput[] | undefined;
  readonly identity: Identity<Context> | undefined;
  readonly cost: number | undefined;
}

const OWN_KEYS = [
  'limits',
  'fields',
  'directive',
  'maxCost',
  'defaultListSize',
  'listArguments',
  'objectCost',
  'scalarCost',
  'identity',
  'user',
  'ip',
  'ipv6Subnet',
] as const;
/** Core options that would be silently wrong here: the identifiers a limiter sees are the plugin's own. */
const REFUSED: Record<string, string> = {
  refunds: 'the plugin reserves and settles, so its limiter always has refunds',
  penalty: 'a denied operation spends nothing',
  lockout: 'not supported by the GraphQL plugin',
  allow: 'the limiter sees per-coordinate identifiers, not yours: decide whom to limit in `identity`',
  deny: 'the limiter sees per-coordinate identifiers, not yours',
  identifierKinds: 'the plugin names its own identifier kinds',
  overrides: 'not supported by the GraphQL plugin',
};
const RULE_KEYS = new Set(['limit', 'window', 'burst', 'precision']);
const COORDINATE = /^[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*)?$/;
const NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

function count(value: unknown, option: string, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 1e9) {
    throw new ConfigError(option, `must be an integer from ${min} to 1e9; got ${describeValue(value)}`);
  }
  return value;
}

function identityOf<C>(value: unknown, option: string): Identity<C> | undefined {
  if (value === undefined || value === 'user' || value === 'ip' || typeof value === 'function') return value as Identity<C> | undefined;
  throw new ConfigError(option, `must be 'user', 'ip' or a function of the context; got ${describeValue(value)}`);
}

function fn<T>(value: unknown, option: string): T | undefined {
  if (value === undefined || typeof value === 'function') return value as T | undefined;
  throw new ConfigError(option, `must be a function of the context; got ${describeValue(value)}`);
}

/** A coordinate's rules: no `for` or `unit` (the plugin sets both), the rest checked by core at the first schema. */
export function coordinateRules(value: unknown, option: string): RuleInput[] | undefined {
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  if (list.length === 0) throw new ConfigError(option, 'needs at least one rule, e.g. { limit: 10, window: "1m" }');
  return list.map((rule, i) => {
    const at = `${option}[${i}]`;
    if (typeof rule !== 'object' || rule === null)
      throw new ConfigError(at, `must be a rule like { limit: 10, window: '1m' }; got ${describeValue(rule)}`);
    for (const key of Object.keys(rule)) {
      if (!RULE_KEYS.has(key)) {
        throw new ConfigError(
          `${at}.${key}`,
          `is not an option of a field's rule (known: ${[...RULE_KEYS].join(', ')}): the plugin sets for and unit`,
        );
      }
    }
    return { ...(rule as RuleInput) };
  });
}

function operationRules(value: unknown): RuleInput[] {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  return list.map((rule, i) => {
    const at = `limits[${i}]`;
    if (typeof rule !== 'object' || rule === null)
      throw new ConfigError(at, `must be a rule like { limit: 100, window: '1m' }; got ${describeValue(rule)}`);
    const r = rule as RuleInput;
    if (r.for !== undefined) throw new ConfigError(`${at}.for`, "is set by the plugin: an operation's rules count against its identity");
    if (r.unit !== undefined && r.unit !== 'requests' && r.unit !== 'cost') {
      throw new ConfigError(`${at}.unit`, `must be 'requests' (operations) or 'cost' (the operation's cost); got ${describeValue(r.unit)}`);
    }
    return { ...r };
  });
}

/** Validates every option of the plugin once; core's own options are checked when the limiter is made. */
export function resolveOptions<Context>(input: GraphqlRateLimitOptions<Context>): Resolved<Context> {
  if (typeof input !== 'object' || input === null) throw new ConfigError('options', `must be an object; got ${describeValue(input)}`);
  const limiter: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (Object.hasOwn(REFUSED, key)) throw new ConfigError(key, `is not an option of the GraphQL plugin: ${REFUSED[key]}`);
    if ((OWN_KEYS as readonly string[]).includes(key)) continue;
    if (!(LIMITER_OPTION_KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(
        key,
        `is not an option (known: ${[...OWN_KEYS, ...LIMITER_OPTION_KEYS.filter((k) => !(k in REFUSED) && k !== 'limits')].join(', ')})`,
      );
    }
    limiter[key] = value;
  }
  const fields = new Map<string, ResolvedCoordinate<Context>>();
  if (input.fields !== undefined) {
    if (typeof input.fields !== 'object' || input.fields === null)
      throw new ConfigError('fields', `must be an object of coordinates; got ${describeValue(input.fields)}`);
    for (const [coordinate, entry] of Object.entries(input.fields)) {
      const at = `fields['${coordinate}']`;
      if (!COORDINATE.test(coordinate)) throw new ConfigError(at, "is not a schema coordinate: 'Type.field' or 'Type'");
      if (typeof entry !== 'object' || entry === null)
        throw new ConfigError(at, `must be { limits, identity, cost }; got ${describeValue(entry)}`);
      for (const key of Object.keys(entry)) {
        if (!['limits', 'identity', 'cost'].includes(key))
          throw new ConfigError(`${at}.${key}`, 'is not an option of a coordinate (known: limits, identity, cost)');
      }
      fields.set(coordinate, {
        rules: coordinateRules(entry.limits, `${at}.limits`),
        identity: identityOf<Context>(entry.identity, `${at}.identity`),
        cost: entry.cost === undefined ? undefined : count(entry.cost, `${at}.cost`, 0),
      });
    }
  }
  const directive = input.directive ?? 'rateLimit';
  if (directive !== false && (typeof directive !== 'string' || !NAME.test(directive))) {
    throw new ConfigError('directive', `must be a directive name such as 'rateLimit', or false; got ${describeValue(directive)}`);
  }
  const listArguments = input.listArguments ?? ['first', 'last', 'limit'];
  if (!Array.isArray(listArguments) || !listArguments.every((a) => typeof a === 'string' && NAME.test(a))) {
    throw new ConfigError('listArguments', `must be a list of argument names; got ${describeValue(listArguments)}`);
  }
  return {
    operationRules: operationRules(input.limits),
    fields,
    directive,
    maxCost: count(input.maxCost, 'maxCost', 10_000, 1),
    defaultListSize: count(input.defaultListSize, 'defaultListSize', 100, 1),
    listArguments,
    objectCost: count(input.objectCost, 'objectCost', 1),
    scalarCost: count(input.scalarCost, 'scalarCost', 0),
    identity: identityOf<Context>(input.identity, 'identity') ?? 'user',
    user: fn(input.user, 'user'),
    ip: fn(input.ip, 'ip'),
    ipv6Subnet: resolveIpv6Subnet(input.ipv6Subnet),
    limiter: limiter as Omit<LimiterOptions, 'limits'>,
  };
}
