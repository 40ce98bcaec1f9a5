import {
  getOperationAST,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { ConfigError, createLimiter, trackResponseWork, type Limiter, type Reservation } from '@floodgate/core/adapter';
import { COST_UNIT, OPERATION_KIND, REQUESTS_UNIT } from './coordinates';
import { rateLimited, tooCostly, type Denial } from './denial';
import { Identities } from './identity';
import { planOperation, TooLarge, type PlannedField } from './operation-plan';
import { resolveOptions, type GraphqlRateLimitOptions, type Resolved } from './options';
import { SchemaLimits } from './schema-limits';
import { actual, estimate, type Tally } from './tally';

/*
 * What both plugins share (docs/graphql.md): an operation is planned, estimated, refused above maxCost, then
 * every limit it touches is reserved in ONE call of one limiter (core's reserve(): the operation's requests
 * and cost and each limited coordinate's selections, each a unit, all admitted or none counted); once it has
 * run, the reservation is settled at the actual tally from its result.
 */

/** An operation as a server hands it over. */
export interface OperationInput<Context> {
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  /** The operation to run, when the server resolved it already (Apollo); else found by name. */
  readonly operation?: OperationDefinitionNode | null | undefined;
  readonly operationName?: string | null | undefined;
  readonly variables?: Readonly<Record<string, unknown>> | null | undefined;
  readonly context: Context;
}

/** Admitted: finish() settles at the result. */
export interface Admitted {
  readonly denial?: undefined;
  /** Settles at what the result shows ran (at least the estimate when it has errors); tracked for settled(). */
  finish(result: unknown): void;
}

export type Admission = Admitted | { readonly denial: Denial };

const ADMIT_FREE: Admitted = { finish: () => undefined };

/** An operation planned: its fields and their estimate (read only: a settle tallies into a tally of its own). */
interface Planned<Context> {
  /** The schema's limits it was planned with (a new schema plans again). */
  readonly limits: SchemaLimits<Context>;
  readonly fields: PlannedField<Context>[];
  readonly estimated: Tally;
}
const TOO_LARGE = Symbol('too large');
/** Plans kept per document (per operation name and variables): the oldest goes first. */
const PLANS_PER_DOCUMENT = 16;

interface SchemaState<Context> {
  readonly limits: SchemaLimits<Context>;
  readonly limiter: Limiter | undefined;
}

export class Gate<Context> {
  private readonly options: Resolved<Context>;
  private readonly states = new WeakMap<GraphQLSchema, SchemaState<Context>>();
  private limiter: Limiter | undefined;
  private rulesKey: string | undefined;
  private readonly plans = new WeakMap<DocumentNode, Map<string, Planned<Context> | typeof TOO_LARGE>>();

  constructor(input: GraphqlRateLimitOptions<Context>) {
    this.options = resolveOptions(input);
  }

  /** The limiter every operation is checked by (made at the first schema; undefined when nothing has rules). */
  get currentLimiter(): Limiter | undefined {
    return this.limiter;
  }

  /** Reads a schema's limits and makes the limiter: configuration errors surface here, when the server starts. */
  prepare(schema: GraphQLSchema): SchemaState<Context> {
    let state = this.states.get(schema);
    if (state) return state;
    const limits = new SchemaLimits(schema, this.options);
    const key = JSON.stringify(limits.rules);
    if (this.rulesKey !== undefined && key !== this.rulesKey) {
      throw new ConfigError(
        'schema',
        "a new schema's limits differ from the first schema's: make a new plugin for them (its limiter's rules are fixed)",
      );
    }
    if (this.rulesKey === undefined && limits.rules.length > 0) {
      this.limiter = createLimiter({ name: 'graphql', ...this.options.limiter, limits: limits.rules, refunds: true });
    }
    this.rulesKey = key;
    state = { limits, limiter: this.limiter };
    this.states.set(schema, state);
    return state;
  }

  async admit(input: OperationInput<Context>): Promise<Admission> {
    const { limits, limiter } = this.prepare(input.schema);
    const planned = this.planOf(limits, input);
    if (planned === undefined) return ADMIT_FREE; // no such operation: the executor answers the error
    if (planned === TOO_LARGE) return { denial: tooCostly(undefined, this.options.maxCost) };
    const { fields, estimated } = planned;
    if (estimated.cost > this.options.maxCost) return { denial: tooCostly(estimated.cost, this.options.maxCost) };
    if (!limiter) return ADMIT_FREE;

    const who = new Identities(input.context, this.options);
    const identifiers: string[] = [];
    if (this.options.operationRules.length > 0) identifiers.push(`${OPERATION_KIND}:${who.of(this.options.identity)}`);
    for (const [kind, n] of estimated.counts) {
      const limited = limits.byKind.get(kind);
      if (n > 0 && limited) identifiers.push(`${kind}:${who.of(limited.identity)}`);
    }
    if (identifiers.length === 0) return ADMIT_FREE;
    const units = limits.units;
    const reservation = await limiter.reserve(identifiers, { cost: costOf(units, estimated) });
    if (!reservation.decision.allowed) return { denial: rateLimited(reservation.decision, limits as SchemaLimits<unknown>) };
    return { finish: (result) => this.finish(reservation, units, limits.schema, fields, estimated, result) };
  }

  /**
   * The plan and estimate of an operation, kept per document (servers cache parsed documents, so a query
   * sent again is the same object) and per operation name and variables, at most PLANS_PER_DOCUMENT of them.
   */
  private planOf(limits: SchemaLimits<Context>, input: OperationInput<Context>): Planned<Context> | typeof TOO_LARGE | undefined {
    let byDocument = this.plans.get(input.document);
    if (!byDocument) this.plans.set(input.document, (byDocument = new Map()));
    const key = `${input.operationName ?? ''}\n${input.variables ? JSON.stringify(input.variables) : ''}`;
    const known = byDocument.get(key);
    if (known !== undefined && (known === TOO_LARGE || known.limits === limits)) return known;
    const operation = input.operation ?? getOperationAST(input.document, input.operationName);
    if (!operation) return undefined;
    const fragments: Record<string, FragmentDefinitionNode> = Object.create(null);
    for (const def of input.document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments[def.name.value] = def;
    let planned: Planned<Context> | typeof TOO_LARGE;
    try {
      const fields = planOperation(limits, fragments, operation, input.variables, this.options);
      planned = { limits, fields, estimated: estimate(fields as PlannedField<unknown>[]) };
    } catch (err) {
      if (!(err instanceof TooLarge)) throw err;
      planned = TOO_LARGE;
    }
    if (byDocument.size >= PLANS_PER_DOCUMENT) byDocument.delete(byDocument.keys().next().value!);
    byDocument.set(key, planned);
    return planned;
  }

  private finish(
    reservation: Reservation,
    units: readonly string[],
    schema: GraphQLSchema,
    fields: readonly PlannedField<Context>[],
    estimated: Tally,
    result: unknown,
  ): void {
    // A stream (subscriptions, @defer, @stream) has no one result: it stays at its estimate.
    if (typeof result !== 'object' || result === null || Symbol.asyncIterator in result) return;
    const { data, errors } = result as { data?: unknown; errors?: readonly unknown[] };
    const ran = actual(schema, fields as PlannedField<unknown>[], data);
    // Errors can null what ran (a non-null field's error nulls its parent, the whole data at worst): an
    // operation with errors is charged at least its estimate, never what its result happens to show.
    if (errors && errors.length > 0) {
      ran.cost = Math.max(ran.cost, estimated.cost);
      for (const [kind, n] of estimated.counts) ran.counts.set(kind, Math.max(n, ran.counts.get(kind) ?? 0));
    }
    trackResponseWork(reservation.settle(costOf(units, ran)).catch(() => false));
  }

  async close(): Promise<void> {
    await this.limiter?.close();
  }
}

/** A tally as the limiter's cost: a number per unit it counts. */
function costOf(units: readonly string[], tally: Tally): Record<string, number> {
  const cost: Record<string, number> = {};
  for (const unit of units) {
    cost[unit] = unit === REQUESTS_UNIT ? 1 : unit === COST_UNIT ? tally.cost : (tally.counts.get(unit) ?? 0);
  }
  return cost;
}
