import type { DocumentNode, ExecutionResult, GraphQLSchema } from 'graphql';
import type { Limiter } from '@floodgate/core/adapter';
import { Gate } from './gate';
import type { GraphqlRateLimitOptions } from './options';

/*
 * The Envelop plugin (GraphQL Yoga and every Envelop server): the operation is admitted in onExecute, after
 * parsing and validation, before any resolver runs; a denial replaces the result (Yoga answers 429 and
 * Retry-After from the error's `extensions.http`); onExecuteDone settles at the result. Typed structurally,
 * so the package needs no Envelop at run time or in its declarations.
 */

interface ExecuteArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null | undefined;
  variableValues?: Readonly<Record<string, unknown>> | null | undefined;
  contextValue?: unknown;
}

/** `useRateLimit()`'s plugin: give it to Yoga's `plugins` or envelop(). */
export interface EnvelopRateLimitPlugin {
  onSchemaChange(payload: { schema: GraphQLSchema }): void;
  onExecute(payload: {
    args: ExecuteArgs;
    setResultAndStopExecution(result: ExecutionResult): void;
  }): Promise<void | { onExecuteDone(payload: { result: unknown }): void }>;
  /** The limiter every operation is checked by, once the plugin has seen a schema with limits. */
  readonly limiter: Limiter | undefined;
  /** Closes the plugin's limiter (which frees its name). */
  close(): Promise<void>;
}

/** Floodgate for Envelop and GraphQL Yoga: `createYoga({ schema, plugins: [useRateLimit(options)] })`. */
export function useRateLimit<Context = Record<string, unknown>>(options: GraphqlRateLimitOptions<Context>): EnvelopRateLimitPlugin {
  const gate = new Gate<Context>(options);
  return {
    onSchemaChange({ schema }) {
      gate.prepare(schema);
    },
    async onExecute({ args, setResultAndStopExecution }) {
      const admission = await gate.admit({
        schema: args.schema,
        document: args.document,
        operationName: args.operationName,
        variables: args.variableValues,
        context: args.contextValue as Context,
      });
      if (admission.denial) {
        setResultAndStopExecution({ errors: [admission.denial.error] });
        return;
      }
      return { onExecuteDone: ({ result }) => admission.finish(result) };
    },
    get limiter() {
      return gate.currentLimiter;
    },
    close: () => gate.close(),
  };
}
