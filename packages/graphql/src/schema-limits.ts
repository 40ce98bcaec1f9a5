import {
  getNamedType,
  isInterfaceType,
  isLeafType,
  isObjectType,
  type GraphQLInterfaceType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { ConfigError, type RuleInput } from '@floodgate/core/adapter';
import { COST_UNIT, kindOf, OPERATION_KIND, REQUESTS_UNIT } from './coordinates';
import { readDirective } from './directive';
import type { Identity, Resolved } from './options';

/*
 * What a schema limits (docs/graphql.md): the `@rateLimit` directive's uses and the `fields` option (which
 * replaces the directive on the coordinates it names), read once per schema into the rules of the one limiter
 * that checks every operation, and per field its cost and the coordinates a selection of it counts against.
 */

/** A coordinate with rules: its selections count against `<kind>:<identity>`. */
export interface Limited<Context> {
  readonly coordinate: string;
  /** The type of the coordinate (`User` for `User.id`). */
  readonly owner: string;
  readonly kind: string;
  readonly identity: Identity<Context>;
}

/** What a selection of one field costs and counts against. */
export interface FieldInfo<Context> {
  /** Per value the field resolves to. */
  readonly cost: number;
  readonly limited: readonly Limited<Context>[];
}

/** Rules of one atomic check: core's bound on a limiter's rules. */
const MAX_RULES = 32;

interface Said<Context> {
  rules?: readonly RuleInput[] | undefined;
  identity?: Identity<Context> | undefined;
  cost?: number | undefined;
}

type Composite = GraphQLObjectType | GraphQLInterfaceType;

export class SchemaLimits<Context> {
  /** The limiter's rules: the operation's, then each limited coordinate's. */
  readonly rules: RuleInput[] = [];
  /** Limited coordinates by kind. */
  readonly byKind = new Map<string, Limited<Context>>();
  private readonly said = new Map<string, Said<Context>>();
  private readonly limitedOf = new Map<string, Limited<Context>>();
  private readonly infos = new Map<string, FieldInfo<Context>>();

  constructor(
    readonly schema: GraphQLSchema,
    private readonly options: Resolved<Context>,
  ) {
    this.read();
    for (const rule of options.operationRules) this.rules.push({ ...rule, for: OPERATION_KIND });
    for (const [coordinate, said] of this.said) {
      if (!said.rules || said.rules.length === 0) continue; // a cost alone limits nothing
      const kind = kindOf(coordinate);
      const owner = coordinate.split('.')[0]!;
      const limited: Limited<Context> = { coordinate, owner, kind, identity: said.identity ?? options.identity };
      this.limitedOf.set(coordinate, limited);
      this.byKind.set(kind, limited);
      for (const rule of said.rules) this.rules.push({ ...rule, for: kind, unit: kind });
    }
    if (this.rules.length > MAX_RULES) {
      throw new ConfigError(
        'fields',
        `the operation's rules and every limited field's add up to ${this.rules.length} rules; one atomic check holds at most ${MAX_RULES} (limited: ${[...this.limitedOf.keys()].join(', ')})`,
      );
    }
  }

  /** The units the limiter's rules count, each once. */
  get units(): string[] {
    return [...new Set(this.rules.map((r) => r.unit ?? REQUESTS_UNIT))];
  }

  /** Whether the operation's rules count its cost. */
  get countsCost(): boolean {
    return this.rules.some((r) => r.for === OPERATION_KIND && r.unit === COST_UNIT);
  }

  /** A field of `parent`: its cost, and the coordinates it counts against (for an interface, every implementation's too). */
  field(parent: Composite, name: string): FieldInfo<Context> {
    const key = `${parent.name}.${name}`;
    let info = this.infos.get(key);
    if (info) return info;
    const owners: Composite[] = isInterfaceType(parent) ? [parent, ...this.schema.getPossibleTypes(parent)] : [parent];
    let cost = 0;
    const limited: Limited<Context>[] = [];
    for (const owner of owners) {
      const def = owner.getFields()[name];
      if (!def) continue;
      const field = this.said.get(`${owner.name}.${name}`);
      const type = this.said.get(owner.name);
      const fallback = isLeafType(getNamedType(def.type)) ? this.options.scalarCost : this.options.objectCost;
      cost = Math.max(cost, field?.cost ?? type?.cost ?? fallback);
      for (const coordinate of [`${owner.name}.${name}`, owner.name]) {
        const l = this.limitedOf.get(coordinate);
        if (l && !limited.includes(l)) limited.push(l);
      }
    }
    info = { cost, limited };
    this.infos.set(key, info);
    return info;
  }

  private read(): void {
    const { directive, fields } = this.options;
    if (directive !== false) {
      for (const type of Object.values(this.schema.getTypeMap())) {
        if (type.name.startsWith('__') || !(isObjectType(type) || isInterfaceType(type))) continue;
        const onType = readDirective(this.schema, directive, type, type.name);
        if (onType) this.said.set(type.name, onType as Said<Context>);
        for (const field of Object.values(type.getFields())) {
          const coordinate = `${type.name}.${field.name}`;
          const onField = readDirective(this.schema, directive, field, coordinate);
          if (onField) this.said.set(coordinate, onField as Said<Context>);
        }
      }
    }
    for (const [coordinate, entry] of fields) {
      const [typeName, fieldName] = coordinate.split('.') as [string, string | undefined];
      const type = this.schema.getType(typeName);
      if (!type || !(isObjectType(type) || isInterfaceType(type))) {
        throw new ConfigError(`fields['${coordinate}']`, `names ${typeName}, which is no object or interface type of the schema`);
      }
      if (fieldName !== undefined && !type.getFields()[fieldName]) {
        throw new ConfigError(
          `fields['${coordinate}']`,
          `names no field of ${typeName} (fields: ${Object.keys(type.getFields()).join(', ')})`,
        );
      }
      this.said.set(coordinate, entry);
    }
  }
}
