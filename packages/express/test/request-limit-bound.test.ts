import request from 'supertest';
import { closeClients, connect, uniquePrefix } from '@floodgate/testing';
import type { RateLimitMiddleware } from '@floodgate/express';
import { servedLimits } from './served-limit';

/*
 * docs/overrides.md, "Cost and bounds": a limit(req) past 256 distinct answers, on a real Express app. A
 * request whose answer would be the 257th rule set is checked under the limiter's own rules, where the
 * function's limit is 1 (the strictest answer there is): never an error for every new answer, never more
 * than an answer would admit, whoever mints answers; and overrides written afterwards still apply.
 */
const redis = connect();
const serve = servedLimits();
afterAll(closeClients);

// Mid-hour, on the limiter's manual clock: every window of the test is one window.
const NOW = Date.UTC(2030, 0, 1, 12, 30);

/** An app whose limit is the `x-limit` header (what no app should do: the attacker's lever, here) and whose client is `x-key`. */
async function app(warnings: string[]): Promise<{ url: string; limiter: RateLimitMiddleware['limiter'] }> {
  const { url, limit } = await serve({
    redis,
    prefix: uniquePrefix('rl-bound'),
    algorithm: 'fixed-window',
    clock: () => NOW,
    identify: (req) => `key:${req.get('x-key') ?? 'anonymous'}`,
    limits: { limit: (req) => Number(req.get('x-limit')), window: '1h' },
    overrides: true,
    logger: { warn: (m) => warnings.push(m) },
  });
  return { url, limiter: limit.limiter };
}

const get = async (url: string, key: string, limit: number): Promise<number> =>
  (
    await request(url)
      .get('/')
      .set({ 'x-key': key, 'x-limit': String(limit) })
  ).status;

/** Status -> how many. */
function tally(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

test('300 clients with 300 distinct answers: every one served (300 of 300, none a 500), the ones past the bound at limit 1', async () => {
  const warnings: string[] = [];
  const { url } = await app(warnings);
  const statuses: number[] = [];
  for (let i = 0; i < 300; i++) statuses.push(await get(url, `c${i}`, 1000 + i));
  expect(tally(statuses)).toEqual({ 200: 300 });
  // Past the bound, a client's second request: the limiter's own rules, 1 an hour.
  const past = await request(url).get('/').set({ 'x-key': 'c299', 'x-limit': '1299' });
  expect(past.status).toBe(429);
  expect(past.headers['ratelimit-policy']).toBe('"1h";q=1;w=3600');
  // A known answer keeps its own limit.
  expect(await get(url, 'c0', 1000)).toBe(200);
  expect(warnings.filter((w) => w.includes('limit(req) gave more than 256 distinct answers'))).toHaveLength(1);
});

test('an attacker minting answers past the bound gets no more than its own answer gave it', async () => {
  const { url } = await app([]);
  for (let i = 0; i < 255; i++) expect(await get(url, `c${i}`, 1000 + i)).toBe(200);
  // The attacker's answer is 2 (the 256th), then it mints 50 new ones.
  const known = [await get(url, 'mallory', 2), await get(url, 'mallory', 2)];
  const minted: number[] = [];
  for (let i = 0; i < 50; i++) minted.push(await get(url, 'mallory', 5000 + i));
  expect(known).toEqual([200, 200]);
  expect(tally(minted)).toEqual({ 429: 50 });
  // A fresh attacker identity minting from the start: 1 of 50 (the function's limit 1 past the bound).
  const fresh: number[] = [];
  for (let i = 0; i < 50; i++) fresh.push(await get(url, 'eve', 6000 + i));
  expect(tally(fresh)).toEqual({ 200: 1, 429: 49 });
});

test('overrides written after 300 distinct answers are accepted and applied: 3 of 10 for a punished client', async () => {
  const { url, limiter } = await app([]);
  for (let i = 0; i < 300; i++) await get(url, `c${i}`, 1000 + i);
  await limiter.overrides.set('key:punished', { limits: { limit: 3, window: '1h' } });
  await limiter.overrides.set('key:vip', { limits: { limit: 40, window: '1h' } });
  const punished: number[] = [];
  for (let i = 0; i < 10; i++) punished.push(await get(url, 'punished', 1000 + i));
  expect(tally(punished)).toEqual({ 200: 3, 429: 7 });
  // An override beats the function past the bound too: 40, not 1.
  const vip: number[] = [];
  for (let i = 0; i < 10; i++) vip.push(await get(url, 'vip', 7000 + i));
  expect(tally(vip)).toEqual({ 200: 10 });
});
