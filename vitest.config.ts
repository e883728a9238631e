import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', '**/src/**/*.test.ts'],
    // Tests that spawn dist/ must run the same code as the sources the others import.
    globalSetup: ['test/harness/fresh-dist.ts'],
    exclude: ['node_modules', 'dist'],
    // The default output, then the list of the tests that skipped: none skips unseen.
    reporters: ['default', './test/harness/skipped-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration and fault tests start real processes and fsync real files; two cores can
    // only take so many at once before timing-sensitive assertions see scheduler noise.
    maxWorkers: 2,
  },
});
