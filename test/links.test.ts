import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/*
 * Links that cannot rot: every relative Markdown link and image of README.md, CONTRIBUTING.md and
 * docs/**\/*.md (the generated API reference under docs/api included) points at a file or folder of the
 * repository, and every #anchor at a heading of the page it names, as GitHub renders them, or at an
 * explicit `<a id>` anchor. Links
 * inside code (fenced blocks, `spans`) are not links and are not read.
 */
const root = join(__dirname, '..');

function markdownUnder(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return markdownUnder(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const pages = ['README.md', 'CONTRIBUTING.md', ...markdownUnder('docs')];

/** The text of a page outside fenced code blocks, line by line (a fenced line becomes ''). */
function prose(text: string): string[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      return '';
    }
    if (marker !== undefined) {
      fence = marker;
      return '';
    }
    return line;
  });
}

/** GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  // Code spans are literal text (`<identifier>` stays); outside them, links keep their text and tags go.
  return heading
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part.slice(1, -1) : part.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '')))
    .join('')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page: one per heading, a repeated one suffixed -1, -2, ... as GitHub does. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  // Explicit HTML anchors (the API reference's: typedoc.json's useHTMLAnchors), which GitHub keeps.
  for (const line of prose(text)) for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  return anchors;
}

/** Every link target of a page's prose with its line: inline links and images, and reference definitions. */
function linksOf(text: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  prose(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ line: i + 1, target: m[1]! });
    const definition = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(line);
    if (definition) links.push({ line: i + 1, target: definition[1]! });
  });
  return links;
}

const anchorCache = new Map<string, Set<string>>();
const anchorsOfFile = (file: string): Set<string> => {
  let anchors = anchorCache.get(file);
  if (!anchors) anchorCache.set(file, (anchors = anchorsOf(readFileSync(file, 'utf8'))));
  return anchors;
};

/** What is wrong with one link of `page` ('' when nothing is). */
function brokenLink(page: string, target: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return ''; // https:, mailto:: not checked here
  const hash = target.indexOf('#');
  const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === '' ? join(root, page) : join(root, dirname(page), path);
  if (!file.startsWith(root)) return 'points outside the repository';
  if (!existsSync(file)) return `${relative(root, file)} does not exist`;
  if (anchor === undefined) return '';
  if (!file.endsWith('.md')) return `an anchor into ${relative(root, file)}, which is not Markdown`;
  return anchorsOfFile(file).has(anchor) ? '' : `${relative(root, file)} has no heading #${anchor}`;
}

test('the pages checked are the README, CONTRIBUTING.md and every page of docs/', () => {
  expect(pages).toEqual(
    expect.arrayContaining(['README.md', 'CONTRIBUTING.md', join('docs', 'README.md'), join('docs', 'migrating', 'express-rate-limit.md')]),
  );
  for (const page of pages) expect(existsSync(join(root, page))).toBe(true);
});

test('anchors are made as GitHub makes them', () => {
  const text = [
    '# Floodgate',
    '## Set-up',
    '### `inspect <identifier>`',
    '## Failure policies, and what they cost',
    '## Set-up',
    '```sh',
    '# not a heading',
    '```',
  ].join('\n');
  expect([...anchorsOf(text)]).toEqual(['floodgate', 'set-up', 'inspect-identifier', 'failure-policies-and-what-they-cost', 'set-up-1']);
  expect(linksOf('See [a](b.md#c), ![d](e.svg), `[f](g.md)` and\n[h]: i.md\n```md\n[j](k.md)\n```')).toEqual([
    { line: 1, target: 'b.md#c' },
    { line: 1, target: 'e.svg' },
    { line: 2, target: 'i.md' },
  ]);
});

test('every relative link and #anchor points at a file and a heading that exist', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    for (const { line, target } of linksOf(readFileSync(join(root, page), 'utf8'))) {
      checked++;
      const why = brokenLink(page, target);
      if (why !== '') broken.push(`${page}:${line}: (${target}) ${why}`);
    }
  }
  expect(checked).toBeGreaterThan(50);
  expect(broken).toEqual([]);
});
