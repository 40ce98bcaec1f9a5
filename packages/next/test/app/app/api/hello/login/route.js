export const dynamic = 'force-dynamic';

export function POST() {
  return Response.json({ in: true });
}
