/**
 * A vitest reporter beside the default one: at the end of a run it lists every test that skipped,
 * with the note it gave (`context.skip(note)`), so a test that cannot run here (no kcat, no
 * Chromium, no tmpfs) is seen rather than counted among the passes. CI makes those fail instead
 * (the TAILBASE_REQUIRE_* variables .ci/run sets); this list is for everything else.
 */
import type { Reporter, TestModule } from 'vitest/node';

/** Skipped tests listed by name; past it, only counted. */
const SKIPPED_LISTED_MAX = 100;

export default class SkippedReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const skipped: string[] = [];
    for (const testModule of testModules) {
      for (const test of testModule.children.allTests('skipped')) {
        const result = test.result();
        const note = result.state === 'skipped' && result.note ? `: ${result.note}` : '';
        const mode = test.options.mode === 'todo' ? ' (todo)' : '';
        skipped.push(`  ${testModule.relativeModuleId} > ${test.fullName}${mode}${note}`);
      }
    }
    if (skipped.length === 0) return;
    const lines = [`skipped tests (${skipped.length}):`, ...skipped.slice(0, SKIPPED_LISTED_MAX)];
    if (skipped.length > SKIPPED_LISTED_MAX) {
      lines.push(`  ... and ${skipped.length - SKIPPED_LISTED_MAX} more`);
    }
    console.info(lines.join('\n'));
  }
}
