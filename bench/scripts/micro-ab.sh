#!/usr/bin/env bash
# An interleaved A/B of decide-micro.mjs: the two builds alternate, PAIRS times, pinned to one core; prints
# each run and the medians and the paired differences (A - B) of CPU µs per call. Build A is usually `.`
# (this checkout's build), B a snapshot from snapshot-before.sh.
#   bench/scripts/micro-ab.sh . /tmp/fg-before 6379 allow 8
set -euo pipefail
a=${1:?usage: micro-ab.sh BUILD_A BUILD_B REDIS_PORT [hot|allow|shared] [PAIRS]}
b=${2:?}
port=${3:?}
mode=${4:-allow}
pairs=${5:-8}
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq 1 "$pairs"); do
  for build in "$a" "$b"; do taskset -c 0 node "$here/decide-micro.mjs" "$build" "$port" "$mode"; done
done | tee /dev/stderr | node -e '
const runs = require("fs").readFileSync(0, "utf8").trim().split("\n").map((l) => Number(l.match(/([\d.]+)$/)[1]));
const A = runs.filter((_, i) => i % 2 === 0), B = runs.filter((_, i) => i % 2 === 1);
const med = (xs) => { const s = [...xs].sort((x, y) => x - y); return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2; };
const d = A.map((x, i) => x - B[i]);
console.log(`A median ${med(A).toFixed(2)}, B median ${med(B).toFixed(2)}; A - B per pair: median ${med(d).toFixed(2)}, A lower in ${d.filter((x) => x < 0).length} of ${d.length}`);'
