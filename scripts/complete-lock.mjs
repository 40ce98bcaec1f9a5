#!/usr/bin/env node
// npm 11.19 leaves other platforms' optional packages (turbo, rollup, jest's resolver bindings...) out of
// package-lock.json, and then `npm ci` refuses that same lockfile as "not in sync". This adds the missing
// entries (version, and os/cpu/libc read from the package name), so `npm ci` accepts the lockfile; npm skips
// them as usual on platforms they do not fit, and fetches them by version where they do.
// Run it after any `npm install` that changes the lockfile: `node scripts/complete-lock.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'netbsd', 'openharmony', 'sunos', 'aix', 'win32', 'windows'];
const CPU = ['arm64', 'arm', 'x64', 'ia32', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el', 'wasm32', '64'];

function exactVersion(range) {
  const m = /\d+\.\d+\.\d+(-[\w.]+)?/.exec(range);
  if (!m) throw new Error(`complete-lock: cannot read a version from ${range}`);
  return m[0];
}

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const out = {};
  const os = parts.find((p) => OS.includes(p));
  if (os) out.os = [os === 'windows' ? 'win32' : os];
  const cpu = parts.find((p) => CPU.includes(p) && p !== '64') ?? (parts.includes('64') ? 'x64' : undefined);
  if (cpu) out.cpu = [cpu];
  if (parts.includes('musl') || parts.includes('musleabihf')) out.libc = ['musl'];
  else if (parts.includes('gnu') || parts.includes('gnueabihf')) out.libc = ['glibc'];
  return out;
}

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;
let added = 0;

for (const [where, meta] of Object.entries(packages)) {
  for (const [name, range] of Object.entries(meta.optionalDependencies ?? {})) {
    // Resolution as node does it: nested first, then hoisted to the root node_modules.
    const nested = `${where ? `${where}/` : ''}node_modules/${name}`;
    const key = packages[nested] ? nested : `node_modules/${name}`;
    if (packages[key]) continue;
    // The exact versions of other platforms' binaries may not be on the registry this machine reaches,
    // so their metadata is derived from the package name; npm skips them on a platform they do not fit.
    const entry = { version: exactVersion(range) };
    if (meta.dev) entry.dev = true;
    entry.optional = true;
    Object.assign(entry, platformOf(name));
    packages[key] = entry;
    added++;
  }
}

lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`complete-lock: added ${added} optional platform entries\n`);
