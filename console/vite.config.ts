// The console's build: Preact's JSX compiled by Vite's own transform (no plugin), one script and
// one stylesheet with hashed names in dist/console, which the gateway serves (gateway/console.ts).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: '/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: here('../dist/console'),
    emptyOutDir: true,
    // The gateway serves one flat assets/ folder and nothing inline (its page forbids inline script).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    target: 'es2022',
  },
});
