import type { PairState } from '../../src/kernel/decision';
import { Uncounted, type RuleRoom } from '../../src/engine/uncounted';

/** A ledger on a hand-driven clock; rules of 5 per second and 20 per minute apply to every identifier. */
function rig(
  rules: RuleRoom[] = [
    { windowMs: 1_000, capacity: 5 },
    { windowMs: 60_000, capacity: 20 },
  ],
  maxIds = 100,
) {
  let now = 0;
  const ledger = new Uncounted(() => now, maxIds);
  const rooms = (): readonly RuleRoom[] => rules;
  return {
    ledger,
    admit: (id: string, cost = 1) => ledger.admit([id], cost, rooms, true),
    full: (id: string, cost = 1) => ledger.full([id], cost, rooms),
    advance: (ms: number) => (now += ms),
  };
}

const pair = (identifier: string, windowMs: number, remaining: number): PairState => ({
  identifier,
  limit: 100,
  windowMs,
  remaining,
  resetMs: windowMs,
  allowed: true,
  retryAfterMs: 0,
});

test("admits up to each rule's capacity within its window, and says when the next unit fits", () => {
  const r = rig();
  for (let i = 0; i < 5; i++) expect(r.admit('a')).toBeUndefined();
  expect(r.admit('a')).toEqual({ identifier: 'a', retryAfterMs: 1_000 });
  r.advance(400);
  expect(r.admit('a')?.retryAfterMs).toBe(600);
  r.advance(600);
  // The per-second rule forgot them; the per-minute rule still counts all 5.
  for (let i = 0; i < 5; i++) expect(r.admit('a')).toBeUndefined();
  for (let s = 0; s < 2; s++) {
    r.advance(1_000);
    for (let i = 0; i < 5; i++) expect(r.admit('a')).toBeUndefined();
  }
  r.advance(1_000);
  expect(r.admit('a')).toEqual({ identifier: 'a', retryAfterMs: 56_000 });
  // Another identifier has its own room.
  expect(r.admit('b')).toBeUndefined();
});

test('a cost above a capacity is never admitted; before sending, only an identifier with uncounted units is refused', () => {
  const r = rig();
  expect(r.admit('a', 6)?.identifier).toBe('a');
  expect(r.full('a', 6)).toBeUndefined();
  expect(r.admit('a', 3)).toBeUndefined();
  expect(r.full('a', 2)).toBeUndefined();
  expect(r.full('a', 3)).toEqual({ identifier: 'a', retryAfterMs: 1_000 });
  // Nothing was recorded by the refusals, nor by a peek's admission.
  expect(r.ledger.admit(['a'], 2, () => [{ windowMs: 1_000, capacity: 5 }], false)).toBeUndefined();
  expect(r.full('a', 2)).toBeUndefined();
});

test("an answer of the store admits only while its remaining units cover the identifier's uncounted ones", () => {
  const r = rig();
  for (let i = 0; i < 3; i++) r.admit('a');
  expect(r.ledger.over([pair('a', 1_000, 3), pair('a', 60_000, 10)], 0)).toBeUndefined();
  expect(r.ledger.over([pair('a', 1_000, 2)], 0)).toEqual({ identifier: 'a', retryAfterMs: 1_000 });
  // A peek would have consumed its cost.
  expect(r.ledger.over([pair('a', 1_000, 3)], 1)?.identifier).toBe('a');
  expect(r.ledger.over([pair('b', 1_000, 0)], 0)).toBeUndefined();
  r.advance(1_000);
  expect(r.ledger.over([pair('a', 1_000, 0), pair('a', 60_000, 3)], 0)).toBeUndefined();
  r.ledger.forget(['a']);
  expect(r.ledger.over([pair('a', 60_000, 0)], 0)).toBeUndefined();
});

test('memory: merged units count no shorter than alone; at most maxIds identifiers, the least recently admitted forgotten', () => {
  // Rules of very different windows: spans of 6.25 ms, so 30 admissions 50 ms apart would be 30 spans.
  const r = rig(
    [
      { windowMs: 100, capacity: 1_000 },
      { windowMs: 1_600, capacity: 1_000 },
    ],
    10,
  );
  for (let i = 0; i < 30; i++) {
    expect(r.admit('a')).toBeUndefined();
    r.advance(50);
  }
  // All 30 were admitted within the last 1,600 ms: none forgotten by the merges.
  expect(r.ledger.over([pair('a', 1_600, 29)], 0)?.identifier).toBe('a');
  expect(r.ledger.over([pair('a', 1_600, 30)], 0)).toBeUndefined();
  r.advance(1_600);
  expect(r.ledger.over([pair('a', 1_600, 0)], 0)).toBeUndefined();
  expect(r.ledger.size).toBe(0);
  for (let i = 0; i < 25; i++) r.admit(`id-${i}`);
  expect(r.ledger.size).toBe(10);
  expect(r.ledger.over([pair('id-0', 1_600, 0)], 0)).toBeUndefined();
  expect(r.ledger.over([pair('id-24', 1_600, 0)], 0)?.identifier).toBe('id-24');
});

test('a steady trickle under the limit is never refused: units leave as their window passes', () => {
  const r = rig([{ windowMs: 60_000, capacity: 100 }]);
  // One every 2 s (30 a minute against 100) for 10 minutes.
  for (let i = 0; i < 300; i++) {
    expect(r.admit('a')).toBeUndefined();
    r.advance(2_000);
  }
});

test("Redis's admissions of a crowded client count against what the policy admits, never against Redis's answers", () => {
  const r = rig();
  const rooms = (): readonly RuleRoom[] => [{ windowMs: 1_000, capacity: 5 }];
  // A client with one check in flight at a time, and nothing noted: nothing kept.
  r.ledger.counted(['a'], 1, rooms, false);
  expect(r.ledger.size).toBe(0);
  r.ledger.counted(['a'], 3, rooms, true);
  expect(r.admit('a', 2)).toBeUndefined();
  expect(r.admit('a')?.identifier).toBe('a');
  // Only the 2 uncounted units must fit in what Redis says it has left.
  expect(r.ledger.over([pair('a', 1_000, 2)], 0)).toBeUndefined();
  // A crowded check of 'b' is noted; its next check, alone in flight, is not: a client crowded once by
  // chance does not have every later check noted (a cost on each) for as long as its notes keep it.
  r.ledger.counted(['b'], 1, rooms, true);
  r.ledger.counted(['b'], 3, rooms, false);
  // Before sending, only uncounted units refuse a check, even one above the capacity.
  expect(r.full('b', 6)).toBeUndefined();
  expect(r.admit('b', 4)).toBeUndefined();
  // An identifier holding units the policy admitted has every admission by Redis noted, alone or not: 'c'
  // was admitted 2 by the policy, then 3 by Redis one at a time, and the policy has no room left for it.
  r.admit('c', 2);
  for (let i = 0; i < 3; i++) r.ledger.counted(['c'], 1, rooms, false);
  expect(r.admit('c')?.identifier).toBe('c');
  // Once its rules' windows have passed, 'c' holds nothing the policy admitted: a lone check goes unnoted again.
  r.advance(60_000);
  r.ledger.counted(['c'], 1, rooms, false);
  expect(r.admit('c', 5)).toBeUndefined();
});

test('units Redis counted alone refuse nothing; the units the policy admits refuse again wherever the ledger has them', () => {
  const r = rig(undefined, 3);
  const rooms = (): readonly RuleRoom[] => [
    { windowMs: 1_000, capacity: 5 },
    { windowMs: 60_000, capacity: 20 },
  ];
  // A crowded client's admissions by Redis: kept, but they never refuse a check before or after Redis.
  r.ledger.counted(['a', 'b'], 5, rooms, true);
  expect(r.ledger.holdsUncounted).toBe(false);
  expect(r.full('a', 5)).toBeUndefined();
  expect(r.ledger.over([pair('a', 1_000, 0)], 0)).toBeUndefined();
  // The policy admits units of 'c' and 'd': each refuses once what is left cannot cover them.
  for (let i = 0; i < 5; i++) r.admit('c');
  for (let i = 0; i < 5; i++) r.admit('d');
  expect(r.ledger.holdsUncounted).toBe(true);
  expect(r.full('c')?.identifier).toBe('c');
  // 'a' and 'b' are the least recently noted: 'c' and 'd' pushed them out (maxIds 3), and the bound
  // forgets them, not what 'd' holds. Forgetting 'c' (reset()) leaves 'd' refused as before.
  expect(r.ledger.size).toBe(3);
  r.ledger.forget(['c']);
  expect(r.full('d')?.identifier).toBe('d');
  expect(r.ledger.over([pair('d', 1_000, 4)], 0)?.identifier).toBe('d');
  // The per-second units of 'd' are a second old: only the per-minute rule counts them, and only when
  // Redis has fewer than 5 left.
  r.advance(1_000);
  expect(r.full('d', 15)).toBeUndefined();
  expect(r.full('d', 16)?.identifier).toBe('d');
  expect(r.ledger.over([pair('d', 60_000, 4)], 0)?.identifier).toBe('d');
  // A minute on, 'd' keeps only what Redis counts of it: nothing is held, and nothing refused.
  r.advance(59_000);
  r.ledger.counted(['d'], 1, rooms, true);
  expect(r.ledger.holdsUncounted).toBe(false);
  expect(r.ledger.over([pair('d', 60_000, 0)], 0)).toBeUndefined();
  // New admissions by the policy refuse again (4 fit beside the 1 Redis counted this second).
  for (let i = 0; i < 4; i++) expect(r.admit('d')).toBeUndefined();
  expect(r.full('d', 1)).toBeUndefined();
  expect(r.full('d', 2)?.identifier).toBe('d');
});

test('whether the ledger holds uncounted units is exactly whether one of its identifiers does, whatever the order of notes', () => {
  // A seeded walk of admissions, Redis's counts, resets, clock steps and a tight bound on identifiers. The
  // flag full() and over() rely on to refuse nothing must never say "none" while an identifier's spans
  // still hold some, nor the reverse; it is checked against the spans themselves after every step.
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  const rules: RuleRoom[] = [
    { windowMs: 100, capacity: 1_000 },
    { windowMs: 1_600, capacity: 1_000 },
  ];
  const r = rig(rules, 4);
  const rooms = (): readonly RuleRoom[] => rules;
  const entries = (r.ledger as unknown as { entries: Map<string, { spans: { uncounted: number }[] }> }).entries;
  const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
  let cleared = 0;
  for (let step = 0; step < 4_000; step++) {
    const id = ids[rand(ids.length)]!;
    const op = rand(10);
    // Outages come and go: the policy admits in the first 300 steps of every 1,000 only.
    if (op < 3) {
      if (step % 1_000 < 300) r.admit(id, 1 + rand(3));
    } else if (op < 7) r.ledger.counted([id, ids[rand(ids.length)]!], 1 + rand(3), rooms, rand(2) === 0);
    else if (op < 8) r.ledger.forget([id]);
    else r.advance(rand(400));
    const holding = [...entries.values()].some((e) => e.spans.some((s) => s.uncounted > 0));
    expect(r.ledger.holdsUncounted).toBe(holding);
    if (!holding && entries.size > 0) cleared++;
  }
  // The walk reached the case the flag is for: identifiers noted, none of them holding uncounted units.
  expect(cleared).toBeGreaterThan(100);
});

test('identifiers nothing counts any more leave as others are noted, one a note, whatever the order they were noted in', () => {
  const r = rig([{ windowMs: 1_000, capacity: 1_000 }], 1_000);
  const rooms = (): readonly RuleRoom[] => [{ windowMs: 1_000, capacity: 1_000 }];
  for (let i = 0; i < 50; i++) r.ledger.counted([`id-${i}`], 1, rooms, true);
  // Noted again: it moves behind the others.
  r.ledger.counted(['id-0'], 1, rooms, true);
  r.advance(1_000);
  for (let i = 0; i < 49; i++) r.ledger.counted(['busy'], 1, rooms, true);
  expect(r.ledger.size).toBeGreaterThan(1);
  for (let i = 0; i < 3; i++) r.ledger.counted(['busy'], 1, rooms, true);
  expect(r.ledger.size).toBe(1);
});
