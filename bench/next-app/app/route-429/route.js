import { bench } from '../../bench';

// The hand-written 429 in a route handler: what a denial costs Next itself there.
export const dynamic = 'force-dynamic';

export function GET() {
  return Response.json(bench.hand429.body, { status: 429, headers: bench.hand429.headers });
}
