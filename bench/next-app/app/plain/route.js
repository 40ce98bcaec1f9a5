// No limiter: the baseline.
export const dynamic = 'force-dynamic';

export function GET() {
  return new Response('ok');
}
