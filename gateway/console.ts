/**
 * The web console's routes: `GET /` (its page) and `GET /assets/:file` (its script and styles),
 * served from the package's dist/console, where `npm run build` puts Vite's output. The files are
 * read once, when the app is made; only those files are served, so no request path reaches the
 * file system. The page itself carries no data: every call it makes goes through the API and its
 * keys, so it needs no scope.
 *
 * Cache: asset names carry a hash of their content (Vite), so they are cached for a year and never
 * revalidated; the page is revalidated on every load, so a new build shows at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Context } from 'hono';
import { API_ROUTES } from './api/routes.js';
import type { DeclaredRoutes } from './routes/declared.js';
import { TailbaseError } from '../shared/errors.js';
import { packageRoot } from '../shared/package-root.js';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};
const ASSET_CACHE = 'public, max-age=31536000, immutable';
const PAGE_CACHE = 'no-cache';
/** Everything the page loads is its own: no CDN, no fonts from the net, no inline script. */
const PAGE_SECURITY = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

interface ConsoleFile {
  bytes: Uint8Array<ArrayBuffer>;
  contentType: string;
}

/** dist/console of the package this module belongs to, run from dist/ or from the sources. */
export function consoleDir(): string {
  return path.join(packageRoot(), 'dist', 'console');
}

/** The page and the assets of a console build, or null when it has not been built. */
function readBuild(dir: string): { page: ConsoleFile; assets: Map<string, ConsoleFile> } | null {
  const pagePath = path.join(dir, 'index.html');
  if (!fs.existsSync(pagePath)) return null;
  const page = {
    bytes: new Uint8Array(fs.readFileSync(pagePath)),
    contentType: CONTENT_TYPES['.html'],
  };
  const assets = new Map<string, ConsoleFile>();
  const assetDir = path.join(dir, 'assets');
  const names = fs.existsSync(assetDir) ? fs.readdirSync(assetDir) : [];
  for (const name of names) {
    const contentType = CONTENT_TYPES[path.extname(name)];
    if (contentType === undefined) continue;
    assets.set(name, {
      bytes: new Uint8Array(fs.readFileSync(path.join(assetDir, name))),
      contentType,
    });
  }
  return { page, assets };
}

function send(c: Context, file: ConsoleFile, headers: Record<string, string>): Response {
  return c.body(file.bytes, 200, { 'content-type': file.contentType, ...headers });
}

export function consoleRoutes(declare: DeclaredRoutes, dir = consoleDir()): void {
  const build = readBuild(dir);
  const notBuilt = () =>
    new TailbaseError(503, 'console_not_built', 'the console is not built: run npm run build');

  declare(API_ROUTES.consolePage, (c) => {
    if (build === null) throw notBuilt();
    return send(c, build.page, { 'cache-control': PAGE_CACHE, ...PAGE_SECURITY });
  });

  declare(API_ROUTES.consoleAsset, (c) => {
    if (build === null) throw notBuilt();
    const name = c.req.param('file') ?? '';
    const file = build.assets.get(name);
    if (file === undefined) {
      return c.json({ error: { code: 'not_found', message: `no console asset ${name}` } }, 404);
    }
    return send(c, file, { 'cache-control': ASSET_CACHE, 'x-content-type-options': 'nosniff' });
  });
}
