/**
 * The search corpus: real text nobody on the team wrote, found on this machine (Debian copyright
 * files, man pages, package READMEs), built once into bench/fixtures/corpus.ndjson (gitignored)
 * and loaded from there. Order and content depend only on the files, so two machines with the
 * same packages build the same corpus. `node dist/bench/corpus.js [--rebuild]` builds it by hand.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { FIXTURES_DIR, REPO_ROOT } from './paths.js';

export const CORPUS_FILE = join(FIXTURES_DIR, 'corpus.ndjson');
const DOCS_MAX = 6000;
const CORPUS_BYTES_MAX = 24 * 1024 * 1024;
const DOC_BODY_BYTES_MAX = 32 * 1024;
const DOC_BODY_BYTES_MIN = 200;
const MAN_PAGES_MAX = 2500;
const COPYRIGHTS_MAX = 2000;
const READMES_MAX = 1000;

export interface CorpusDoc {
  key: string;
  value: { title: string; body: string; source: string };
}

export interface Corpus {
  docs: CorpusDoc[];
  /** Bytes of the documents' JSON values, the size a user would upload. */
  bytes: number;
  file: string;
}

interface Source {
  kind: string;
  files: () => string[];
  read: (file: string) => string;
  title: (file: string) => string;
  max: number;
}

function listSorted(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Roff to plain text, crudely: requests dropped, font escapes removed. Good enough for search. */
function stripRoff(roff: string): string {
  return roff
    .split('\n')
    .filter((line) => !line.startsWith('.') && !line.startsWith("'"))
    .join('\n')
    .replace(/\\f[BIRP]|\\f\(..|\\f\[[^\]]*\]/g, '')
    .replace(/\\\(..|\\\[[^\]]*\]|\\[-e&|^~ ]/g, (m) => (m === '\\-' ? '-' : ' '))
    .replace(/\\\*\(?\w+/g, '');
}

const SOURCES: Source[] = [
  {
    kind: 'man',
    files: () =>
      listSorted('/usr/share/man/man1')
        .filter((f) => f.endsWith('.1.gz'))
        .map((f) => join('/usr/share/man/man1', f)),
    read: (file) => stripRoff(gunzipSync(readFileSync(file)).toString('utf8')),
    title: (file) => basename(file).replace(/\.1\.gz$/, ''),
    max: MAN_PAGES_MAX,
  },
  {
    kind: 'copyright',
    files: () =>
      listSorted('/usr/share/doc')
        .map((pkg) => join('/usr/share/doc', pkg, 'copyright'))
        .filter(isFile),
    read: (file) => readFileSync(file, 'utf8'),
    title: (file) => basename(join(file, '..')),
    max: COPYRIGHTS_MAX,
  },
  {
    kind: 'readme',
    files: () => {
      const root = join(REPO_ROOT, 'node_modules');
      const packages = listSorted(root).flatMap((name) =>
        name.startsWith('@') ? listSorted(join(root, name)).map((n) => `${name}/${n}`) : [name],
      );
      return packages.map((p) => join(root, p, 'README.md')).filter(isFile);
    },
    read: (file) => readFileSync(file, 'utf8'),
    title: (file) => file.slice(join(REPO_ROOT, 'node_modules').length + 1, -'/README.md'.length),
    max: READMES_MAX,
  },
];

function truncate(text: string): string {
  const normalized = text
    .replace(/\r\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  if (Buffer.byteLength(normalized) <= DOC_BODY_BYTES_MAX) return normalized;
  const cut = Buffer.from(normalized).subarray(0, DOC_BODY_BYTES_MAX).toString('utf8');
  return cut.slice(0, Math.max(cut.lastIndexOf(' '), 0)).replace(/\uFFFD$/, '');
}

export function buildCorpus(): Corpus {
  const docs: CorpusDoc[] = [];
  const keys = new Set<string>();
  let bytes = 0;
  for (const source of SOURCES) {
    let taken = 0;
    for (const file of source.files()) {
      if (taken >= source.max || docs.length >= DOCS_MAX || bytes >= CORPUS_BYTES_MAX) break;
      let body: string;
      try {
        body = truncate(source.read(file));
      } catch {
        continue;
      }
      if (Buffer.byteLength(body) < DOC_BODY_BYTES_MIN) continue;
      const title = source.title(file);
      const key = `${source.kind}.${title}`.replace(/[^A-Za-z0-9._@+-]/g, '_');
      if (keys.has(key)) continue;
      keys.add(key);
      const value = { title, body, source: source.kind };
      bytes += Buffer.byteLength(JSON.stringify(value));
      docs.push({ key, value });
      taken += 1;
    }
  }
  mkdirSync(FIXTURES_DIR, { recursive: true });
  writeFileSync(CORPUS_FILE, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
  return { docs, bytes, file: CORPUS_FILE };
}

/** The corpus from its fixture, built on first use. */
export async function loadCorpus(options: { rebuild?: boolean } = {}): Promise<Corpus> {
  if (options.rebuild || !existsSync(CORPUS_FILE)) return buildCorpus();
  const docs = readFileSync(CORPUS_FILE, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as CorpusDoc);
  const bytes = docs.reduce((sum, d) => sum + Buffer.byteLength(JSON.stringify(d.value)), 0);
  return { docs, bytes, file: CORPUS_FILE };
}

if (process.argv[1] && basename(process.argv[1]) === 'corpus.js') {
  const corpus = await loadCorpus({ rebuild: process.argv.includes('--rebuild') });
  console.log(`${corpus.docs.length} documents, ${corpus.bytes} bytes: ${corpus.file}`);
}
