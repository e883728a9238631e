/**
 * Vitest's global setup: builds dist/ before any test file runs if a source is newer than its
 * output there (or has none).
 *
 * Many tests run dist/ (spawnNode, the CLI process tests, `npm start`, the lock race's racers)
 * while others import the sources in process. `npm test` builds first, but `npx vitest run` or
 * `vitest` alone does not: with a dist/ older than the sources those tests run other code than
 * the in-process ones, and fail, or pass, for reasons the sources do not show.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

export default function setup(): void {
  const stale = staleSources();
  if (stale.length === 0) return;
  const more = stale.length > 1 ? ` and ${stale.length - 1} more` : '';
  console.info(`dist/ is older than ${stale[0]}${more}: building it (tsc -p tsconfig.json)`);
  const build = spawnSync(process.execPath, [TSC, '-p', 'tsconfig.json'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (build.status !== 0) throw new Error(`tsc -p tsconfig.json failed (${build.status})`);
}

/** The sources tsconfig.json builds whose .js in dist/ is missing or older than they are. */
function staleSources(): string[] {
  const config = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8')) as {
    include: string[];
  };
  const configMs = fs.statSync(path.join(ROOT, 'tsconfig.json')).mtimeMs;
  const stale: string[] = [];
  for (const dir of config.include) {
    for (const source of sourcesUnder(path.join(ROOT, dir))) {
      const relative = path.relative(ROOT, source);
      const output = path.join(ROOT, 'dist', relative.replace(/\.ts$/, '.js'));
      const outputMs = fs.statSync(output, { throwIfNoEntry: false })?.mtimeMs ?? -1;
      if (outputMs < fs.statSync(source).mtimeMs || outputMs < configMs) stale.push(relative);
    }
  }
  return stale;
}

function sourcesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .filter((name) => !name.endsWith('.test.ts'))
    .map((name) => path.join(dir, name));
}
