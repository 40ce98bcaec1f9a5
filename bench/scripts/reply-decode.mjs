// What ioredis's RESP decoder spends on a reply, by its shape: Floodgate's reply to a check of 1 rule on 1
// identifier (the clock, the verdict, the commit flag, the identifier's block ms and reason, then remaining,
// reset and retry: 7 integers and an empty string; docs/design.md, section 4) and of 3 rules x 2
// identifiers, against the floor's (bench/src/lib/floor.lua: the count and the TTL). Each reply is decoded
// REPLY_DECODE_N (2,000,000) times after a warm-up; the figure is ns per reply.
//   node bench/scripts/reply-decode.mjs
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const require = createRequire(join(resolve('.'), 'package.json'));
const { Decoder } = require('ioredis/built/resp/decoder.js');
const N = Number(process.env.REPLY_DECODE_N ?? 2_000_000);

const resp = (items) =>
  `*${items.length}\r\n` + items.map((x) => (typeof x === 'number' ? `:${x}\r\n` : `$${Buffer.byteLength(x)}\r\n${x}\r\n`)).join('');
const NOW = 1_796_531_024_463;
const pair = [999_999_999, 59_999, 0];
const SHAPES = {
  'floor (count, TTL)': [17, 59_999],
  'Floodgate 1 x 1': [NOW, 1, 1, 0, '', ...pair],
  'Floodgate 3 x 2': [NOW, 1, 1, 0, '', 0, '', ...Array.from({ length: 6 }, () => pair).flat()],
};

for (const [name, items] of Object.entries(SHAPES)) {
  const bytes = Buffer.from(resp(items));
  let last;
  const decoder = new Decoder({ onReply: (r) => (last = r), onErrorReply: () => {}, onPush: () => {}, getTypeMapping: () => ({}) });
  for (let i = 0; i < N / 10; i++) decoder.write(bytes);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) decoder.write(bytes);
  const ns = Number(process.hrtime.bigint() - t0) / N;
  if (JSON.stringify(last) !== JSON.stringify(items)) throw new Error(`${name}: decoded ${JSON.stringify(last)}`);
  console.log(`${name}: ${items.length} items, ${bytes.length} bytes, ${ns.toFixed(0)} ns per reply`);
}
