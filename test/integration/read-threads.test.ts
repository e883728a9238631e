// Proves a read thread never answers a token from a snapshot older than it: keys overwritten
// over and over are each read back at the write's token, by key, by search and by scan, and every
// answer holds that version, never an earlier one; a settings change is read at its token on
// every thread. Over `tailbase start` with two read threads (key reads and short scans on the HTTP
// thread, and everything on the read threads), and over a cluster whose serve-node process applies on one thread, answers
// key reads on its HTTP thread and scans and searches on two read threads.
import { afterAll, describe, expect, it } from 'vitest';
import {
  kafkaFace,
  spawnEmbedded,
  spawnNode,
  tempDir,
  type SpawnedNode,
} from '../harness/index.js';
import { call } from './gateway-harness.js';

const READ_THREADS = 2;
const SESSIONS = 4;
const OVERWRITES = 60;
/** A read thread that missed a commit would wait this long, then answer 504. */
const WAIT_MS = 2_000;
const PARTITIONS = 4;

const stops: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

async function embedded(keyReads: 'here' | 'threads'): Promise<string> {
  const node = await spawnEmbedded({
    partitions: PARTITIONS,
    args: [
      ...['--read-threads', String(READ_THREADS), '--key-reads', keyReads],
      // Short scans on the HTTP thread too with key reads there: the same tokens, another reader.
      ...(keyReads === 'here' ? ['--scan-here-limit-max', '100'] : []),
    ],
  });
  stops.push(() => node.stop());
  return node.url;
}

async function cluster(): Promise<string> {
  const logDir = tempDir('read-threads-log');
  const serveDir = tempDir('read-threads-serve');
  stops.push(async () => {
    logDir.cleanup();
    serveDir.cleanup();
  });
  const started = (node: SpawnedNode) => {
    stops.push(() => node.stop());
    return node;
  };
  const kafka = await kafkaFace();
  started(
    await spawnNode('log-node', [
      ...['--data', logDir.path, '--port', '0', '--partitions', String(PARTITIONS)],
      ...kafka.args,
    ]),
  );
  const serve = started(
    await spawnNode('serve-node', [
      ...['--data', serveDir.path, '--port', '0', '--log', kafka.url],
      ...['--read-threads', String(READ_THREADS)],
    ]),
  );
  const gateway = started(
    await spawnNode('gateway', ['--port', '0', '--log', kafka.url, '--serve', serve.url]),
  );
  return gateway.url;
}

/** The offsets a token names, in its order (shared/token.ts has the layout). */
function tokenOffsets(text: string): number[] {
  const bytes = Buffer.from(text, 'base64url');
  const offsets: number[] = [];
  let at = 5;
  const varint = () => {
    let value = 0;
    for (let scale = 1; ; scale *= 0x80) {
      const byte = bytes[at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
  };
  while (at < bytes.length) {
    at += 4;
    varint();
    offsets.push(varint());
  }
  return offsets;
}

describe.each([
  ['tailbase start, key reads and short scans on the HTTP thread', () => embedded('here')],
  ['tailbase start, key reads on the read threads', () => embedded('threads')],
  ['a cluster with a serve-node split over threads', cluster],
])('reads on read threads: %s', (_, start) => {
  let url: string;

  it('each overwrite of a key is read back at its token, by key, search and scan', async () => {
    url = await start();
    const wrong: string[] = [];
    const session = async (s: number) => {
      const key = `k${s}`;
      for (let version = 0; version < OVERWRITES; version++) {
        const word = `v${s}x${version}`;
        const put = await call(url, 'PUT', `/v1/collections/over/docs/${key}`, {
          word,
          version,
        });
        expect(put.status).toBe(200);
        const token = { 'tailbase-token': put.body.token as string };
        const query = `wait_ms=${WAIT_MS}`;
        const [get, found, scanned] = await Promise.all([
          call(url, 'GET', `/v1/collections/over/docs/${key}?${query}`, undefined, token),
          call(url, 'GET', `/v1/collections/over/search?q=${word}&${query}`, undefined, token),
          call(url, 'GET', `/v1/collections/over/docs?prefix=${key}&${query}`, undefined, token),
        ]);
        if (get.body?.value?.version !== version) wrong.push(`get ${word}: ${get.status}`);
        if (found.body?.hits?.[0]?.key !== key) wrong.push(`search ${word}: ${found.status}`);
        const item = scanned.body?.items?.find((i: { key: string }) => i.key === key);
        if (item?.value?.version !== version) wrong.push(`scan ${word}: ${scanned.status}`);
      }
    };
    await Promise.all(Array.from({ length: SESSIONS }, (_, s) => session(s)));
    expect(wrong).toEqual([]);
  });

  it('a key read without a token answers one that covers the version it read', async () => {
    const under: string[] = [];
    for (let version = 0; version < OVERWRITES; version++) {
      const put = await call(url, 'PUT', '/v1/collections/over/docs/eventual', { version });
      expect(put.status).toBe(200);
      const path = `/v1/collections/over/docs/eventual?wait_ms=${WAIT_MS}`;
      const atToken = await call(url, 'GET', path, undefined, { 'tailbase-token': put.body.token });
      expect(atToken.body?.value?.version).toBe(version);
      // No token: whatever that reader has applied; the token it answers must reach the offset
      // of the version it read, or a client carrying it could be served an older one after.
      const eventual = await call(url, 'GET', path);
      expect(eventual.status).toBe(200);
      const offsets = tokenOffsets(eventual.token ?? '');
      if (offsets.length !== 1 || offsets[0] < eventual.body.offset) {
        under.push(`version ${eventual.body.value.version} at ${eventual.body.offset}: ${offsets}`);
      }
    }
    expect(under).toEqual([]);
  });

  it('a settings change is read at its token on every read thread', async () => {
    const put = await call(url, 'PUT', '/v1/collections/shelf/docs/a', { title: 'alpha', n: 1 });
    expect(put.status).toBe(200);
    const settings = await call(
      url,
      'PATCH',
      '/v1/collections/shelf/settings',
      { filterable: ['n'] },
      { 'tailbase-token': put.body.token },
    );
    expect(settings.status).toBe(200);
    const token = { 'tailbase-token': settings.body.token as string };
    // More reads than threads, at once, so each thread answers some.
    const reads = await Promise.all(
      Array.from({ length: READ_THREADS * 4 }, () =>
        call(
          url,
          'GET',
          '/v1/collections/shelf/search?q=alpha&filter=n%20%3D%201',
          undefined,
          token,
        ),
      ),
    );
    expect(reads.map((read) => [read.status, read.body?.hits?.[0]?.key])).toEqual(
      reads.map(() => [200, 'a']),
    );
  });
});
