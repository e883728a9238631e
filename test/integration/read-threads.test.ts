// Proves a read thread never answers a token from a snapshot older than it: on `tailbase start`
// with two read threads, keys overwritten over and over are each read back at the write's token,
// by key, by search and by scan, and every answer holds that version, never an earlier one,
// while the read threads keep no snapshot of their own up to date unless told of each commit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';
import { call } from './gateway-harness.js';

const READ_THREADS = 2;
const SESSIONS = 4;
const OVERWRITES = 60;
/** A read thread that missed a commit would wait this long, then answer 504. */
const WAIT_MS = 2_000;

let tailbase: SpawnedEmbedded;
beforeAll(async () => {
  tailbase = await spawnEmbedded({
    partitions: 4,
    args: ['--read-threads', String(READ_THREADS)],
  });
});
afterAll(async () => {
  await tailbase?.stop();
});

describe('reads on read threads', () => {
  it('each overwrite of a key is read back at its token, by key, search and scan', async () => {
    const { url } = tailbase;
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

  it('a settings change is read at its token on every read thread', async () => {
    const { url } = tailbase;
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
