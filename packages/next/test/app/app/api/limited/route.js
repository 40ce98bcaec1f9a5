import { limited } from '../../../limits';

export const dynamic = 'force-dynamic';

export const GET = limited(() => Response.json({ limited: true }));
