import { endOf, pause, whenResponseDone } from '../../src/http/node';
import { controlled } from '../fixtures/response-end';

/*
 * A ResponseEnd in place of a Node ServerResponse (an adapter on the Web standard Request and Response, as
 * Hono's): pause, endOf and whenResponseDone wait on its onEnd() as they wait on 'finish' and 'close'.
 */

test('pause waits the time out on an open response, then stops listening', async () => {
  const res = controlled();
  const started = performance.now();
  await expect(pause(res, 60)).resolves.toBe(true);
  expect(performance.now() - started).toBeGreaterThanOrEqual(58);
  expect(res.listening).toBe(0);
});

test('pause resolves false as soon as the client goes away during the wait', async () => {
  const res = controlled();
  const started = performance.now();
  const paused = pause(res, 10_000);
  await new Promise((r) => setImmediate(r)); // the wait has begun
  res.end(false);
  await expect(paused).resolves.toBe(false);
  expect(performance.now() - started).toBeLessThan(2_000);
});

test('pause on a response already over resolves false at once, even for no delay', async () => {
  const res = controlled();
  res.end(false);
  await expect(pause(res, 10_000)).resolves.toBe(false);
  await expect(pause(res, 0)).resolves.toBe(false);
  const open = controlled();
  await expect(pause(open, 0)).resolves.toBe(true);
  expect(open.listening).toBe(0);
});

test('endOf releases once when the response ends, and holds nothing for a response already over', () => {
  const res = controlled();
  const hold = endOf(res);
  const released: string[] = [];
  expect(hold(() => released.push('lease'))).toBe(true);
  res.end(true);
  res.end(false);
  expect(released).toEqual(['lease']);

  const gone = controlled();
  const late = endOf(gone);
  gone.end(false);
  expect(late(() => released.push('late'))).toBe(false);
  expect(released).toEqual(['lease']);
});

test('whenResponseDone reports finished or gone once, and at once for a response already over', () => {
  const seen: boolean[] = [];
  const finished = controlled();
  whenResponseDone(finished, (f) => seen.push(f));
  finished.end(true);
  const gone = controlled();
  gone.end(false);
  whenResponseDone(gone, (f) => seen.push(f));
  expect(seen).toEqual([true, false]);
});
