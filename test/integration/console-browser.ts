/**
 * What the console's browser tests need: Debian's Chromium (/usr/bin/chromium, or
 * TAILBASE_CHROMIUM) driven by playwright-core, and a console build no older than its sources.
 * Without Chromium the tests skip, unless TAILBASE_REQUIRE_CHROMIUM=1 (as .ci/run sets): then
 * they fail.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CHROMIUM_PATH = process.env.TAILBASE_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_REQUIRED = process.env.TAILBASE_REQUIRE_CHROMIUM === '1';
export const CHROMIUM_INSTALLED = fs.existsSync(CHROMIUM_PATH);

export async function launchChromium(): Promise<Browser> {
  if (!CHROMIUM_INSTALLED) {
    throw new Error(`Chromium is required (TAILBASE_REQUIRE_CHROMIUM=1): no ${CHROMIUM_PATH}`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true });
}

/** Where screenshots go: TAILBASE_CONSOLE_SCREENSHOTS (docs/images for the README), or a temp dir. */
export function screenshotDir(): string {
  const dir =
    process.env.TAILBASE_CONSOLE_SCREENSHOTS ??
    fs.mkdtempSync(path.join(os.tmpdir(), 'tailbase-console-'));
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/** Builds dist/console (npm run build:console) when it is missing or older than a source. */
export function ensureConsoleBuild(): void {
  const page = path.join(ROOT, 'dist/console/index.html');
  const builtMs = fs.statSync(page, { throwIfNoEntry: false })?.mtimeMs ?? -1;
  const sources = [
    'console',
    'client/format.ts',
    'client/rebuild-progress.ts',
    'client/loose-json.ts',
  ].flatMap((entry) => {
    const full = path.join(ROOT, entry);
    if (fs.statSync(full).isFile()) return [full];
    return fs
      .readdirSync(full, { recursive: true, encoding: 'utf8' })
      .map((name) => path.join(full, name))
      .filter((name) => fs.statSync(name).isFile());
  });
  if (sources.every((source) => fs.statSync(source).mtimeMs <= builtMs)) return;
  const build = spawnSync('npm', ['run', 'build:console'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`npm run build:console failed (${build.status})`);
}
