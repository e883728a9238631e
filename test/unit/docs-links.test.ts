// Proves the repository's documentation stands alone: every link in every markdown file resolves
// to a file inside the repository (and, for a markdown target with a #fragment, to one of its
// headings). A link to a missing file, to a path outside the repository, or rooted at `/` (it
// resolves against the file system's root anywhere but on GitHub) fails, naming the file, the
// line and the link. The checker is first run on files written here to fail on purpose.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../harness/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** Folders that are not the repository's documentation: installed, built or run-time data. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git', 'data', 'data-cluster']);
/** Targets outside the checker's reach: other sites. Everything else must be a repository file. */
const EXTERNAL = /^(https?:|mailto:)/i;
const FENCE = /^\s*(```|~~~)/;
/** `[text](target)` and `![alt](target)`; a target may carry a "title" after a space. */
const LINK = /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;

interface BrokenLink {
  file: string;
  line: number;
  target: string;
  problem: string;
}

function markdownFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) {
      found.push(...markdownFiles(path.join(dir, entry.name)));
    } else if (entry.isFile() && entry.name.endsWith('.md')) {
      found.push(path.join(dir, entry.name));
    }
  }
  return found;
}

/** The links of a markdown text with their line numbers, outside code blocks and code spans. */
function linksOf(text: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  let inFence = false;
  text.split('\n').forEach((content, index) => {
    if (FENCE.test(content)) inFence = !inFence;
    if (inFence) return;
    for (const match of content.replace(/`[^`]*`/g, '').matchAll(LINK)) {
      links.push({ line: index + 1, target: match[1] });
    }
  });
  return links;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as '-', repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (FENCE.test(line)) inFence = !inFence;
    const heading = inFence ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every link of the markdown files under `root` that does not resolve inside `root`. */
function brokenLinks(root: string): BrokenLink[] {
  const broken: BrokenLink[] = [];
  for (const file of markdownFiles(root)) {
    const text = fs.readFileSync(file, 'utf8');
    const where = path.relative(root, file);
    for (const { line, target } of linksOf(text)) {
      const fail = (problem: string) => broken.push({ file: where, line, target, problem });
      if (EXTERNAL.test(target)) continue;
      if (target.startsWith('/') && !target.startsWith('//')) {
        fail('rooted at /: link relative to this file');
        continue;
      }
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) {
        fail('not a file of the repository');
        continue;
      }
      const [filePart, fragment] = target.split('#', 2);
      const pathPart = decodeURIComponent(filePart.split('?')[0]);
      const resolved = pathPart === '' ? file : path.resolve(path.dirname(file), pathPart);
      const inside = path.relative(root, resolved);
      if (inside.startsWith('..') || path.isAbsolute(inside)) {
        fail('outside the repository');
      } else if (!fs.existsSync(resolved)) {
        fail('no such file');
      } else if (fragment && resolved.endsWith('.md')) {
        if (!anchorsOf(fs.readFileSync(resolved, 'utf8')).has(fragment)) fail('no such heading');
      }
    }
  }
  return broken;
}

describe('markdown links', () => {
  const fixture = tempDir('docs-links');
  afterAll(() => fixture.cleanup());

  it('catches a missing file, a path outside, a rooted path, a missing heading', () => {
    const write = (name: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(fixture.path, name)), { recursive: true });
      fs.writeFileSync(path.join(fixture.path, name), text);
    };
    write('shared/FORMAT.md', '# The format\n\n## Batch header\n');
    write(
      'node/README.md',
      [
        '# node',
        '[rooted](/shared/FORMAT.md#batch-header) [good](../shared/FORMAT.md#batch-header)',
        '[missing](missing.md) [outside](../../elsewhere/DESIGN.md)',
        '[anchor](#no-such-heading) [self](#node) [web](https://example.com/x.md)',
        '```',
        '[in a code block](missing-too.md)',
        '```',
        '`[in a code span](missing-three.md)`',
      ].join('\n'),
    );
    expect(
      brokenLinks(fixture.path).map(({ file, line, target, problem }) => [
        file,
        line,
        target,
        problem,
      ]),
    ).toEqual([
      [
        path.join('node', 'README.md'),
        2,
        '/shared/FORMAT.md#batch-header',
        'rooted at /: link relative to this file',
      ],
      [path.join('node', 'README.md'), 3, 'missing.md', 'no such file'],
      [path.join('node', 'README.md'), 3, '../../elsewhere/DESIGN.md', 'outside the repository'],
      [path.join('node', 'README.md'), 4, '#no-such-heading', 'no such heading'],
    ]);
  });

  it('every link in the repository resolves to a file inside it', () => {
    const files = markdownFiles(ROOT);
    expect(files.map((file) => path.relative(ROOT, file))).toContain(
      path.join('docs', 'README.md'),
    );
    const report = brokenLinks(ROOT).map(
      ({ file, line, target, problem }) => `${file}:${line}: ${target}: ${problem}`,
    );
    expect(report).toEqual([]);
  });
});
