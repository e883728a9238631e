/** Where the suite's files live, found from this module whether it runs from dist/ or source. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DEPTH_MAX = 4;

function findRepoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < DEPTH_MAX; i++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    dir = dirname(dir);
  }
  throw new Error('bench: no package.json above the bench module');
}

export const REPO_ROOT = findRepoRoot();
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');
export const FIXTURES_DIR = join(REPO_ROOT, 'bench', 'fixtures');
export const DIST_DIR = join(REPO_ROOT, 'dist');
