/**
 * The benchmark's Next.js app (bench/src/http/apps-next.ts builds it once per change of its sources, of
 * Next or of the Floodgate build it bundles). @floodgate/next is bundled into the app, as in a user's; the
 * Redis client comes from the bench server (bench.js), so nothing here needs ioredis.
 */
export default {};
