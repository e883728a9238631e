// Proves `--fts-automerge-segments` is refused at parse past its maximum (15, below FTS5's
// crisismerge) by `serve-node` and `tailbase start`, with exit 1 and the bound in the message,
// rather than accepted and then killing the apply thread on its assert when the node starts.
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { TAILBASE_BIN, tempDir, type TempDir } from '../harness/index.js';

const dirs: TempDir[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.cleanup();
});

describe('--fts-automerge-segments', () => {
  it.each([['serve-node'], ['start']])(
    'is refused at 16 by %s, with its bound named',
    (command) => {
      const dir = tempDir(`fts-automerge-bound-${command}`);
      dirs.push(dir);
      const refused = spawnSync(
        process.execPath,
        [TAILBASE_BIN, command, '--data', dir.path, '--fts-automerge-segments', '16'],
        { encoding: 'utf8', env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn' }, timeout: 15_000 },
      );
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(
        "option '--fts-automerge-segments <n>' argument '16' is invalid",
      );
      expect(refused.stderr).toContain('expected at most 15');
    },
  );
});
