/*
 * Every path of the suites' app (GET /, GET /search, POST /login, GET /slow, GET /stream): answered by what
 * the test set for the app this request reached (suite-factory.ts), a route handler that Next runs.
 */
const SLOT = Symbol.for('floodgate.next.suite');

export const dynamic = 'force-dynamic';

function handle(request, context) {
  const suite = globalThis[SLOT];
  if (suite === undefined) return new Response('no suite app in this process', { status: 503 });
  return suite.route(request, context);
}

export { handle as GET, handle as POST };
