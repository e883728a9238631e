/**
 * The root of the tailbase package this module belongs to (run from dist/ or from the sources),
 * and the version its package.json declares: what `tailbase --version`, `/v1/status` and the
 * console's header say.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
}

let version: string | undefined;

/** The package's version, read once. */
export function tailbaseVersion(): string {
  version ??= (
    JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  return version;
}
