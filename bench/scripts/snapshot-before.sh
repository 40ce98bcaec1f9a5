#!/usr/bin/env bash
# Copies the current build of the Floodgate packages (package.json + dist) to DIR, so that a later build can
# be measured against it in one interleaved run: the `floodgate@before` variant loads them from BENCH_BEFORE.
#   npx turbo run build && bench/scripts/snapshot-before.sh /tmp/fg-before   # on the baseline commit
#   ... change, rebuild ...
#   BENCH_BEFORE=/tmp/fg-before BENCH_VARIANTS=floodgate,floodgate@before npm run bench -w @floodgate/bench
set -euo pipefail
dir=${1:?usage: snapshot-before.sh DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dir"
mkdir -p "$dir/node_modules/@floodgate"
for entry in "$root"/node_modules/* "$root"/node_modules/.bin; do
  name=$(basename "$entry")
  [ "$name" = "@floodgate" ] || ln -s "$entry" "$dir/node_modules/$name"
done
for p in core express fastify koa hono nestjs; do
  mkdir -p "$dir/node_modules/@floodgate/$p"
  cp -r "$root/packages/$p/package.json" "$root/packages/$p/dist" "$dir/node_modules/@floodgate/$p/"
done
echo "snapshot of $(git -C "$root" rev-parse --short HEAD) in $dir"
