import { action } from '../../../limits';

export const dynamic = 'force-dynamic';

/** The action limit's call, from a route (the same headers() of next/headers a server action reads). */
export async function POST() {
  const denied = await action();
  return Response.json(denied ?? { ok: true });
}
