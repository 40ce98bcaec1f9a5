import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/*
 * The Node.js versions Floodgate claims are the ones CI tests: `.ci/run` runs both tiers on the machine's Node
 * (the oldest line) and `npm test` on each of NODE_LINES; the README's "Install" names them all, and every
 * package's `engines` allows exactly those majors.
 */
const root = join(__dirname, '..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');
const majorsOf = (range: string): number[] => range.split('||').map((r) => Number(/\^(\d+)/.exec(r.trim())?.[1]));

test('engines, the README and .ci/run name the same Node.js lines', () => {
  const ciLines = /NODE_LINES="\$\{FLOODGATE_NODE_LINES:-([\d ]+)\}"/.exec(read('.ci/run'))![1]!.split(' ').map(Number);
  const readme = /Node\.js ([\d, ]+) and (\d+) are tested/.exec(read('README.md'))!;
  const readmeLines = [...readme[1]!.split(', ').map(Number), Number(readme[2])];
  expect(readmeLines.slice(1)).toEqual(ciLines);
  const manifests = ['package.json', ...readdirSync(join(root, 'packages')).map((p) => join('packages', p, 'package.json'))];
  const engines = manifests.flatMap((m) => {
    const pkg = JSON.parse(read(m)) as { private?: boolean; engines?: { node?: string } };
    return m !== 'package.json' && pkg.private ? [] : [`${m}: ${pkg.engines?.node}`];
  });
  const range = readmeLines.map((n) => `^${n}`).join(' || ');
  expect(engines).toEqual(
    manifests.filter((m) => m === 'package.json' || !(JSON.parse(read(m)) as { private?: boolean }).private).map((m) => `${m}: ${range}`),
  );
  expect(majorsOf(range)).toEqual(readmeLines);
});
