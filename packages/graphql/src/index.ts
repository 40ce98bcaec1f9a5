/**
 * Floodgate for GraphQL (docs/graphql.md): `useRateLimit()` for Envelop and GraphQL Yoga, `apolloRateLimit()`
 * for Apollo Server, over one core: the `@rateLimit` directive and the `fields` map, every limit an operation
 * touches reserved in one atomic call, its cost estimated before it runs and settled once it has.
 *
 * @module @floodgate/graphql
 */
export { useRateLimit, type EnvelopRateLimitPlugin } from './envelop';
export { apolloRateLimit, type ApolloRateLimitPlugin } from './apollo';
export { rateLimitDirective } from './directive';
export type { CoordinateLimits, FieldRule, GraphqlRateLimitOptions, Identity } from './options';
