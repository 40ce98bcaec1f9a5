import { GraphQLError, type DocumentNode, type GraphQLErrorOptions, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Limiter } from '@floodgate/core/adapter';
import { Gate, type Admitted } from './gate';
import type { GraphqlRateLimitOptions } from './options';

/*
 * The Apollo Server plugin: the operation is admitted in didResolveOperation (parsed, validated, its operation
 * known; no resolver has run); a denial is thrown as the GraphQL error, whose `extensions.http` Apollo turns
 * into the status and Retry-After. willSendResponse settles at the result. Typed structurally, so the package
 * needs no Apollo Server at run time or in its declarations.
 */

interface RequestContext<Context> {
  readonly schema: GraphQLSchema;
  readonly document?: DocumentNode | undefined;
  readonly operation?: OperationDefinitionNode | null | undefined;
  readonly request: { readonly variables?: Readonly<Record<string, unknown>> | undefined; readonly operationName?: string | undefined };
  readonly contextValue: Context;
}

interface ResponseContext {
  readonly response: { readonly body: { readonly kind: string; readonly singleResult?: unknown } };
}

/** `apolloRateLimit()`'s plugin: give it to `new ApolloServer({ plugins })`. */
export interface ApolloRateLimitPlugin<Context> {
  serverWillStart(service: { schema: GraphQLSchema }): Promise<void>;
  requestDidStart(): Promise<{
    didResolveOperation(requestContext: RequestContext<Context>): Promise<void>;
    willSendResponse(requestContext: ResponseContext): Promise<void>;
  }>;
  /** The limiter every operation is checked by, once the server has started with a schema with limits. */
  readonly limiter: Limiter | undefined;
  /** Closes the plugin's limiter (which frees its name). */
  close(): Promise<void>;
}

/** Floodgate for Apollo Server 5: `new ApolloServer({ typeDefs, resolvers, plugins: [apolloRateLimit(options)] })`. */
export function apolloRateLimit<Context = Record<string, unknown>>(
  options: GraphqlRateLimitOptions<Context>,
): ApolloRateLimitPlugin<Context> {
  const gate = new Gate<Context>(options);
  return {
    async serverWillStart({ schema }) {
      gate.prepare(schema);
    },
    async requestDidStart() {
      let admitted: Admitted | undefined;
      return {
        async didResolveOperation(rc) {
          if (!rc.document) return;
          const admission = await gate.admit({
            schema: rc.schema,
            document: rc.document,
            operation: rc.operation,
            operationName: rc.request.operationName,
            variables: rc.request.variables,
            context: rc.contextValue,
          });
          if (admission.denial) throw forApollo(admission.denial.error);
          admitted = admission;
        },
        async willSendResponse({ response }) {
          // An incremental response (@defer) has no one result: it stays at its estimate.
          if (admitted && response.body.kind === 'single') admitted.finish(response.body.singleResult);
          admitted = undefined;
        },
      };
    },
    get limiter() {
      return gate.currentLimiter;
    },
    close: () => gate.close(),
  };
}

/** Apollo reads `extensions.http.headers` as a Map (Yoga as an object). */
function forApollo(error: GraphQLError): GraphQLError {
  const http = error.extensions['http'] as { status: number; headers?: Record<string, string> };
  const headers = new Map(Object.entries(http.headers ?? {}));
  // As unknown: a server's declarations may narrow `extensions.http` to its own shape (Yoga's: an object).
  const extensions = { ...error.extensions, http: { status: http.status, headers } } as unknown as GraphQLErrorOptions['extensions'];
  return new GraphQLError(error.message, { extensions });
}
