// Proves the package's entry point (`import { Tailbase } from 'tailbase'`) runs in a browser as
// well as on Node 20: walking the emitted module graph from dist/client/sdk/index.js, no module
// imports a Node built-in or any package, and none uses Node's globals (Buffer, process,
// require). It also proves the name resolves through package.json's `exports` in a real process.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ENTRY = path.join(ROOT, 'dist/client/sdk/index.js');
const IMPORT = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(?\s*['"]([^'"]+)['"]/g;
const COMMENT = /\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm;
const NODE_GLOBAL = /\b(?:Buffer|process|require|__dirname|__filename)\b/;

/** Every module the entry loads, by path, with the specifiers each imports. */
function moduleGraph(entry: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const pending = [entry];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (graph.has(file)) continue;
    const code = fs.readFileSync(file, 'utf8').replace(COMMENT, '');
    const specifiers = [...code.matchAll(IMPORT)].map((m) => m[1] ?? m[2]);
    graph.set(file, specifiers);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) pending.push(path.resolve(path.dirname(file), specifier));
    }
  }
  return graph;
}

describe('the typed client entry point', () => {
  it('loads no Node built-in, no package and no Node global', () => {
    const graph = moduleGraph(ENTRY);
    expect(graph.size).toBeGreaterThan(5);
    for (const [file, specifiers] of graph) {
      const name = path.relative(ROOT, file);
      expect(
        specifiers.filter((s) => !s.startsWith('.')),
        name,
      ).toEqual([]);
      const code = fs.readFileSync(file, 'utf8').replace(COMMENT, '');
      expect(code.match(NODE_GLOBAL)?.[0], name).toBeUndefined();
    }
  });

  it("resolves as 'tailbase' through package.json's exports", () => {
    const script =
      "import { Tailbase, TailbaseError } from 'tailbase';" +
      "const db = new Tailbase({ url: 'http://127.0.0.1:1/' });" +
      "console.log(typeof db.collection('books').put, db.url, typeof TailbaseError);";
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('function http://127.0.0.1:1 function');
  });
});
