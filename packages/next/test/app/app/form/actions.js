'use server';

import { action } from '../../limits';

export async function send() {
  const denied = await action();
  if (denied) return { rateLimited: true, message: denied.message, retryAfterMs: denied.retryAfterMs };
  return { ok: true };
}
