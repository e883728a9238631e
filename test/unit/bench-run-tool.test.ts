// Proves the benchmarks' tool runner answers a tool's whole output, its last line included, keeps
// the tail it is asked for, and names the tool and its output when it fails. (The race it guards
// against, `exit` before the pipes drain, showed only under load and is not forced here.)
import { describe, expect, it } from 'vitest';
import { runTool } from '../../bench/run-tool.js';

const PRINTS = `process.stdout.write('x'.repeat(512 * 1024) + '\\nEND\\n');`;

describe('runTool', () => {
  it('answers with the last line of a tool that exits as it finishes printing', async () => {
    for (let run = 0; run < 5; run++) {
      const output = await runTool(process.execPath, ['-e', PRINTS], { timeoutMs: 10_000 });
      expect(output.endsWith('END\n')).toBe(true);
    }
  });

  it('keeps only the tail it is asked for, and names the tool and its output when it fails', async () => {
    const tail = await runTool(process.execPath, ['-e', PRINTS], {
      timeoutMs: 10_000,
      outputBytesMax: 8,
    });
    expect(tail).toBe('xxxx\nEND\n'.slice(-8));
    await expect(
      runTool(process.execPath, ['-e', 'console.error("broken"); process.exit(3)'], {
        timeoutMs: 10_000,
      }),
    ).rejects.toThrow(/node exited with 3: broken/);
  });
});
