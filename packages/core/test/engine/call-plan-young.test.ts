import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/*
 * V8 allocates an array or object literal straight into the old generation once nearly every object it made
 * survived a young collection, and keeps that decision ("pretenuring" its allocation site). A server's first
 * burst does that to whatever a check holds while in flight: its requests wait for the Redis connection
 * across young collections. A check's identifier array was a literal, so after such a burst every later
 * check's array was born old, and carried its identifier (a string new with each request) into the old
 * generation at the next young collection: in `npm run bench`'s Fastify server, 34 bytes a request and a full
 * collection every few seconds (bench/results/ab/identifiers-young.md). Array.of, slice and Array.from carry
 * no allocation site. Checked in a process of its own with V8's %InYoungGeneration, after a burst of 200,000
 * arrays kept alive across young collections (the literal's site is pretenured by then, every time).
 */
test("a check's identifier array is born young even after a burst pretenured what a literal would make", () => {
  const script = `
    const { CallPlanner } = require(${JSON.stringify(join(__dirname, '../../src/engine/call-plan.ts'))});
    const planner = Object.create(CallPlanner.prototype);
    const forms = { string: (id) => planner.identifiers(id), array: (id) => planner.identifiers([id].slice()) };
    const young = {};
    for (const [form, identifiers] of Object.entries(forms)) {
      let held = [];
      for (let i = 0; i < 200000; i++) held.push(identifiers('ip:' + i));
      held = undefined;
      young[form] = 0;
      for (let i = 0; i < 1000; i++) if (%InYoungGeneration(identifiers('ip:192.0.2.' + (i % 250)))) young[form]++;
    }
    process.stdout.write(JSON.stringify(young));`;
  const out = execFileSync(
    process.execPath,
    ['--allow-natives-syntax', '-r', join(__dirname, '../../../../test/ts-register.cjs'), '-e', script],
    { encoding: 'utf8' },
  );
  // With array literals: 0 of 1,000 young, for both forms (Node.js 20 and 26).
  expect(JSON.parse(out)).toEqual({ string: 1000, array: 1000 });
});
