// Behind the proxy (proxy.js): its limiter, or its hand-written 429, runs before this.
export const dynamic = 'force-dynamic';

export function GET() {
  return new Response('ok');
}
