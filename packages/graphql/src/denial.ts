import { GraphQLError } from 'graphql';
import type { Decision } from '@floodgate/core/adapter';
import { OPERATION_KIND } from './coordinates';
import type { SchemaLimits } from './schema-limits';

/*
 * Denials as GraphQL errors (docs/graphql.md, "Denials"): one error for the operation, `extensions.code`
 * RATE_LIMITED with `retryAfter` in whole seconds (rounded up, at least 1) and the coordinates whose limits
 * denied; `extensions.http` asks the server for status 429 and `Retry-After` (Yoga and Apollo Server both
 * honour it, and leave it out of the response body). A store that could not decide under `failure: 'closed'`
 * is 503, code RATE_LIMIT_UNAVAILABLE. An operation above maxCost is MAX_COST_EXCEEDED, 400: no wait helps.
 */

/** A denial: the error to answer with, and the status a server that can set one should send. */
export interface Denial {
  readonly error: GraphQLError;
  readonly status: number;
}

/** Whole seconds, rounded up, at least 1. */
const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** The coordinates whose limits denied: 'operation' for the operation's requests, 'cost' for its cost. */
function denying(decision: Decision, limits: SchemaLimits<unknown>): string[] {
  const out = new Set<string>();
  for (const pair of decision.states) {
    if (pair.allowed) continue;
    const kind = pair.identifier.slice(0, pair.identifier.indexOf(':'));
    if (kind === OPERATION_KIND) out.add(pair.unit === 'cost' ? 'cost' : 'operation');
    else out.add(limits.byKind.get(kind)?.coordinate ?? kind);
  }
  return [...out];
}

export function rateLimited(decision: Decision, limits: SchemaLimits<unknown>): Denial {
  const retryAfter = seconds(decision.retryAfterMs);
  const headers = { 'Retry-After': String(retryAfter) };
  if (decision.reason === 'store-unavailable') {
    const error = new GraphQLError('Rate limiting is unavailable: try again later.', {
      extensions: { code: 'RATE_LIMIT_UNAVAILABLE', retryAfter, http: { status: 503, headers } },
    });
    return { error, status: 503 };
  }
  const coordinates = denying(decision, limits);
  const what = coordinates.length > 0 ? coordinates.join(', ') : 'this operation';
  const error = new GraphQLError(`Rate limit exceeded (${what}): retry after ${retryAfter} s.`, {
    extensions: { code: 'RATE_LIMITED', retryAfter, coordinates, http: { status: 429, headers } },
  });
  return { error, status: 429 };
}

export function tooCostly(cost: number | undefined, maxCost: number): Denial {
  const message =
    cost === undefined
      ? `This operation selects too many fields to estimate (the most it may cost is ${maxCost}).`
      : `This operation's estimated cost is ${cost}, above the most an operation may cost, ${maxCost}.`;
  const error = new GraphQLError(message, {
    extensions: { code: 'MAX_COST_EXCEEDED', ...(cost === undefined ? {} : { cost }), maxCost, http: { status: 400 } },
  });
  return { error, status: 400 };
}
