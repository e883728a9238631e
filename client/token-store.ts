/**
 * The last session token per gateway URL, kept between command runs so that `tailbase put` then
 * `tailbase get` reads its own write. One JSON file ($TAILBASE_HOME/tokens.json, by default
 * ~/.tailbase/tokens.json) replaced atomically: written under a temporary name, fsynced, renamed,
 * and the directory fsynced, so a crash leaves the old file or the new one, never a torn one.
 * Two runs saving at the same moment: the last rename wins (a token is a hint for reads, losing
 * one costs a read-your-writes wait, not data).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const TOKEN_FILE = 'tokens.json';
const STORE_VERSION = 1;
/** Oldest entries are dropped beyond this many URLs, so the file stays small. */
export const TOKEN_STORE_URLS_MAX = 256;
/** A larger file is not ours to parse: it is ignored (and replaced on the next save). */
const TOKEN_FILE_BYTES_MAX = 1024 * 1024;

interface StoredEntry {
  token: string;
  savedAtMs: number;
}

interface StoreFile {
  version: number;
  tokens: Record<string, StoredEntry>;
}

export function tokenStorePath(env: Record<string, string | undefined>): string {
  const home = env.TAILBASE_HOME || path.join(os.homedir(), '.tailbase');
  return path.join(home, TOKEN_FILE);
}

/** One key per gateway: scheme, host, port and path, without a trailing slash. */
export function normalizeUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
}

function isEntry(value: unknown): value is StoredEntry {
  const entry = value as Partial<StoredEntry> | null;
  return (
    typeof entry === 'object' &&
    entry !== null &&
    typeof entry.token === 'string' &&
    typeof entry.savedAtMs === 'number'
  );
}

/** The file's entries; a missing, oversized or unreadable file is an empty store. */
function readEntries(file: string): Record<string, StoredEntry> {
  let text: string;
  try {
    if (fs.statSync(file).size > TOKEN_FILE_BYTES_MAX) return {};
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return {};
  }
  try {
    const parsed = JSON.parse(text) as Partial<StoreFile>;
    if (parsed.version !== STORE_VERSION || typeof parsed.tokens !== 'object') return {};
    const entries: Record<string, StoredEntry> = {};
    for (const [url, entry] of Object.entries(parsed.tokens ?? {})) {
      if (isEntry(entry)) entries[url] = entry;
    }
    return entries;
  } catch {
    return {};
  }
}

function writeAtomically(file: string, text: string): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temporary = path.join(dir, `.${TOKEN_FILE}.${process.pid}.${Date.now()}.tmp`);
  const fd = fs.openSync(temporary, 'wx', 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(temporary, file);
  } catch (error) {
    fs.rmSync(temporary, { force: true });
    throw error;
  }
  const dirFd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dirFd);
  } finally {
    fs.closeSync(dirFd);
  }
}

export class TokenStore {
  constructor(readonly file: string) {}

  get(url: string): string | undefined {
    return readEntries(this.file)[normalizeUrl(url)]?.token;
  }

  /** Replaces the token kept for url (undefined forgets it). */
  set(url: string, token: string | undefined, nowMs = Date.now()): void {
    const entries = readEntries(this.file);
    const key = normalizeUrl(url);
    if (token === undefined) delete entries[key];
    else entries[key] = { token, savedAtMs: nowMs };
    const kept = Object.entries(entries)
      .sort(([, a], [, b]) => b.savedAtMs - a.savedAtMs)
      .slice(0, TOKEN_STORE_URLS_MAX);
    const file: StoreFile = { version: STORE_VERSION, tokens: Object.fromEntries(kept) };
    writeAtomically(this.file, JSON.stringify(file, null, 2) + '\n');
  }
}
