import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/* The fenced code blocks of a Markdown file, as test/docs.test.ts and test/pack.test.ts read them (docs/design.md, "Code blocks in the docs"). */
export const FRAGMENT = '<!-- fragment -->';
export const CODE = new Map([
  ['ts', 'mts'],
  ['typescript', 'mts'],
  ['mts', 'mts'],
  ['cts', 'cts'],
  ['js', 'mjs'],
  ['javascript', 'mjs'],
  ['mjs', 'mjs'],
  ['cjs', 'cjs'],
]);
export const PROGRAM_TIMEOUT_MS = 15_000;

export interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  fragment: boolean;
}

/** Every fenced block of `file` (relative to `root`), and the lines of fences that name no language. */
export function blocksOf(root: string, file: string): { blocks: Block[]; unlabelled: number[] } {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  const unlabelled: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !(lines[i]!.trim().startsWith(fence!) && lines[i]!.trim().replace(/[`~]/g, '') === ''); i++) {
      body.push(lines[i]!.startsWith(indent!) ? lines[i]!.slice(indent!.length) : lines[i]!);
    }
    if (lang === '') unlabelled.push(start + 1);
    else blocks.push({ file, line: start + 1, lang: lang!, code: body.join('\n') + '\n', fragment: lines[start - 1]?.trim() === FRAGMENT });
  }
  return { blocks, unlabelled };
}

/** The blocks of `file` that are complete programs (TypeScript or JavaScript, not marked as fragments). */
export function programsOf(root: string, file: string): Block[] {
  return blocksOf(root, file).blocks.filter((b) => CODE.has(b.lang) && !b.fragment);
}

/** Runs the repository's tsc on the tsconfig.json of `dir`; its output ('' when everything type-checks). */
export function typeCheck(root: string, dir: string): string {
  try {
    execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--pretty', 'false'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return '';
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? err);
  }
}
