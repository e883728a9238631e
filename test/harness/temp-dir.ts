/**
 * Temporary directories under os.tmpdir() for tests. Each is removed by `cleanup()`; set
 * TAILBASE_TEST_KEEP=1 to keep them (their paths are printed) when a failure needs a look.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TempDir {
  path: string;
  /** Removes the directory and everything in it (kept when TAILBASE_TEST_KEEP=1). */
  cleanup(): void;
}

export function tempDir(prefix: string): TempDir {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tailbase-${prefix}-`));
  return {
    path: dir,
    cleanup: () => {
      if (process.env.TAILBASE_TEST_KEEP === '1') {
        console.info(`kept ${dir}`);
        return;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
