// The public API end to end, as one suite run against every way tailbase is deployed (so what is
// tested is what is deployed): gateway-e2e.test.ts runs it over a cluster of nodes (one
// log-node, two serve-nodes each hosting half the partitions, a gateway on a loopback port),
// embedded-e2e.test.ts over `tailbase start` as a user runs it. It proves writes, token reads
// under concurrent sessions, bulk, scans across partitions with a cursor, merged search,
// settings (PUT replaces, PATCH merges), the change feed and its exact resume, strong reads, writes
// with wait=applied, status (internal topics marked and out of the sums, "rebuilding" from a
// rebuild's 202), health and metrics; listing and dropping collections (a dropped one's token
// refused, its name starting anew) and their bytes on disk (log, LMDB, SQLite); that a collection comes into being with its first write and
// is read at once, and that one collection's token asks nothing of reads of another.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionFor } from '../../shared/partitioner.js';
import { collectionOffsets, TokenCodec } from '../../shared/token.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { spawnEmbedded } from '../harness/index.js';
import { call } from './gateway-harness.js';

/** `tailbase start` from the built CLI as a target, with `partitions` partitions. */
export async function embeddedTarget(partitions: number): Promise<ApiTarget> {
  const embedded = await spawnEmbedded({ partitions });
  return {
    url: embedded.url,
    partitions,
    serveNodes: 1,
    stop: async () => void (await embedded.stop()),
  };
}

/** A running tailbase the suite drives through its public HTTP API alone. */
export interface ApiTarget {
  url: string;
  partitions: number;
  serveNodes: number;
  /** The topic prefix tailbase names its topics with (`--topic-prefix`); empty by default. */
  topicPrefix?: string;
  /** The gateway's --log-compression: its batches are stored that way, smaller than written. */
  logCompression?: 'none' | 'gzip';
  stop(): Promise<void>;
}

/** Each topic-partition's log end offset (`topic/partition` → end), from the public status. */
async function logEnds(url: string): Promise<Map<string, number>> {
  const status = await call(url, 'GET', '/v1/status');
  expect(status.status).toBe(200);
  return new Map(
    (status.body.partitions as { topic: string; partition: number; endOffset: number }[]).map(
      (p) => [`${p.topic}/${p.partition}`, p.endOffset],
    ),
  );
}

/** How long a collection's bytes may take to be measured again after a write; how often asked. */
const BYTES_WAIT_MS_MAX = 30_000;
const BYTES_POLL_MS = 100;

/** A collection name no other run of the suite has written to. */
const freshCollection = (prefix: string) => `${prefix}-${Date.now().toString(36)}`;

export function describeApi(name: string, start: () => Promise<ApiTarget>): void {
  let target: ApiTarget;
  let url: string;

  beforeAll(async () => {
    target = await start();
    url = target.url;
  });

  afterAll(async () => {
    await target?.stop();
  });

  async function readFeed(path: string, headers: Record<string, string> = {}) {
    const response = await fetch(url + path, { headers });
    expect(response.status).toBe(200);
    const text = await response.text();
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line));
  }

  describe(name, () => {
    it('writes, reads its write with the token, deletes', async () => {
      const put = await call(url, 'PUT', '/v1/collections/notes/docs/n1', { title: 'first' });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ key: 'n1', offset: expect.any(Number) });
      expect(put.token).toBe(put.body.token);
      const get = await call(url, 'GET', '/v1/collections/notes/docs/n1', undefined, {
        'tailbase-token': put.token!,
      });
      expect(get.status).toBe(200);
      expect(get.body).toEqual({ key: 'n1', value: { title: 'first' }, offset: put.body.offset });
      expect(get.token).not.toBeNull();
      const del = await call(url, 'DELETE', '/v1/collections/notes/docs/n1', undefined, {
        'tailbase-token': get.token!,
      });
      expect(del.status).toBe(200);
      const gone = await call(url, 'GET', `/v1/collections/notes/docs/n1?token=${del.token}`);
      expect(gone.status).toBe(404);
      expect(gone.body.error.code).toBe('document_not_found');
    });

    it('16 sessions carrying their tokens always read their own writes, by key and by search', async () => {
      let stale = 0;
      const session = async (s: number) => {
        let token = '';
        for (let i = 0; i < 8; i++) {
          const key = `s${s}-${i}`;
          const word = `ryw${s}x${i}`;
          const put = await call(
            url,
            'PUT',
            `/v1/collections/ryw/docs/${key}`,
            { body: word, i },
            token ? { 'tailbase-token': token } : {},
          );
          expect(put.status).toBe(200);
          token = put.body.token;
          const get = await call(url, 'GET', `/v1/collections/ryw/docs/${key}`, undefined, {
            'tailbase-token': token,
          });
          const found = await call(url, 'GET', `/v1/collections/ryw/search?q=${word}`, undefined, {
            'tailbase-token': token,
          });
          if (get.body?.value?.i !== i) stale++;
          if (found.body?.hits?.[0]?.key !== key) stale++;
        }
      };
      await Promise.all(Array.from({ length: 16 }, (_, s) => session(s)));
      expect(stale).toBe(0);
    });

    it('concurrent writes and reads each get their own answer across split batches', async () => {
      const keys = Array.from({ length: 24 }, (_, i) => `c${i}`);
      const puts = await Promise.all(
        keys.map((key) => call(url, 'PUT', `/v1/collections/many/docs/${key}`, { key })),
      );
      expect(puts.map((put) => put.status)).toEqual(keys.map(() => 200));
      const gets = await Promise.all(
        keys.map((key, i) =>
          call(url, 'GET', `/v1/collections/many/docs/${key}?token=${puts[i].token}`),
        ),
      );
      expect(gets.map((get) => get.body)).toEqual(
        keys.map((key, i) => ({ key, value: { key }, offset: puts[i].body.offset })),
      );
      const eventual = await Promise.all(
        [...keys, 'absent'].map((key) => call(url, 'GET', `/v1/collections/many/docs/${key}`)),
      );
      expect(eventual.map((get) => get.status)).toEqual([...keys.map(() => 200), 404]);
    });

    it('keys with slashes, spaces and non-ASCII round-trip', async () => {
      for (const key of ['a/b', 'with space', 'ключ-🙂']) {
        const path = `/v1/collections/notes/docs/${encodeURIComponent(key)}`;
        const put = await call(url, 'PUT', path, { key });
        expect(put.status).toBe(200);
        const get = await call(url, 'GET', path, undefined, { 'tailbase-token': put.token! });
        expect(get.body).toMatchObject({ key, value: { key } });
      }
    });

    it('bulk-loads NDJSON and a JSON array, then scans every key once in order, page by page', async () => {
      const keys = Array.from({ length: 23 }, (_, i) => `k${String(i).padStart(3, '0')}`);
      const ndjson = keys
        .slice(0, 12)
        .map((key) => JSON.stringify({ key, value: { n: key } }))
        .join('\n');
      const first = await call(url, 'POST', '/v1/collections/bulky/docs', ndjson, {
        'content-type': 'application/x-ndjson',
      });
      expect(first.body).toMatchObject({ count: 12 });
      const array = keys.slice(12).map((key) => ({ key, value: { n: key } }));
      const second = await call(url, 'POST', '/v1/collections/bulky/docs', array, {
        'tailbase-token': first.token!,
      });
      expect(second.body).toMatchObject({ count: 11 });
      const seen: string[] = [];
      let cursor: string | null = null;
      let token = second.token!;
      for (let page = 0; page < 20; page++) {
        const query: string = `limit=5${cursor ? `&cursor=${cursor}` : ''}`;
        const scan = await call(url, 'GET', `/v1/collections/bulky/docs?${query}`, undefined, {
          'tailbase-token': token,
        });
        expect(scan.status).toBe(200);
        expect(scan.body.items.length).toBeLessThanOrEqual(5);
        seen.push(...scan.body.items.map((i: { key: string }) => i.key));
        token = scan.token!;
        cursor = scan.body.cursor;
        if (cursor === null) break;
      }
      expect(seen).toEqual(keys);
      const prefix = await call(url, 'GET', `/v1/collections/bulky/docs?prefix=k01&token=${token}`);
      expect(prefix.body.items.map((i: { key: string }) => i.key)).toEqual(keys.slice(10, 20));
      const range = await call(url, 'GET', `/v1/collections/bulky/docs?start=k005&end=k008`);
      expect(range.body.items.map((i: { key: string }) => i.key)).toEqual(['k005', 'k006', 'k007']);
    });

    it('searches across both serve-nodes and merges by score', async () => {
      const docs = [
        { key: 's1', value: { title: 'log structured storage', body: 'the log is the database' } },
        { key: 's2', value: { title: 'gardening', body: 'tomatoes like sun' } },
        { key: 's3', value: { title: 'log log log', body: 'log everything into the log' } },
        { key: 's4', value: { title: 'unrelated', body: 'a log appears once' } },
      ];
      const bulk = await call(url, 'POST', '/v1/collections/papers/docs', docs);
      const search = await call(
        url,
        'GET',
        '/v1/collections/papers/search?q=log&limit=10',
        undefined,
        {
          'tailbase-token': bulk.token!,
        },
      );
      expect(search.status).toBe(200);
      const keys = search.body.hits.map((h: { key: string }) => h.key);
      expect(keys.sort()).toEqual(['s1', 's3', 's4']);
      const scores = search.body.hits.map((h: { score: number }) => h.score);
      expect([...scores].sort((a, b) => b - a)).toEqual(scores);
      expect(search.body).toMatchObject({ total: 3, totalRelation: 'eq' });
      const paged = await call(
        url,
        'GET',
        `/v1/collections/papers/search?q=log&limit=1&offset=1&token=${bulk.token}`,
      );
      expect(paged.body.hits[0].key).toBe(search.body.hits[1].key);
    });

    it('pages through equal scores without repeating or skipping a hit', async () => {
      // Identical documents score the same on a node: only the tie order decides the pages.
      const keys = Array.from({ length: 20 }, (_, i) => `tie-${String(i).padStart(2, '0')}`);
      const bulk = await call(
        url,
        'POST',
        '/v1/collections/ties/docs',
        keys.map((key) => ({ key, value: { text: 'same words here' } })),
      );
      const seen: string[] = [];
      for (let offset = 0; offset < keys.length; offset += 3) {
        const page = await call(
          url,
          'GET',
          `/v1/collections/ties/search?q=same&limit=3&offset=${offset}&token=${bulk.token}`,
        );
        expect(page.status).toBe(200);
        seen.push(...page.body.hits.map((hit: { key: string }) => hit.key));
      }
      expect(seen.sort()).toEqual(keys);
    });

    it('writes settings as one record of the settings topic, read at its token', async () => {
      const before = await logEnds(url);
      const put = await call(url, 'PUT', '/v1/collections/papers/settings', {
        searchable: ['title'],
        tokenizer: 'porter unicode61 remove_diacritics 2',
      });
      expect(put.status).toBe(200);
      // One record in the settings topic's one partition; no collection's log moved.
      const after = await logEnds(url);
      const settings = `${SETTINGS_TOPIC}/0`;
      expect(after.get(settings)).toBe((before.get(settings) ?? 0) + 1);
      for (const [topicPartition, end] of before) {
        if (topicPartition !== settings) expect(after.get(topicPartition)).toBe(end);
      }
      const search = (q: string) =>
        call(url, 'GET', `/v1/collections/papers/search?q=${q}`, undefined, {
          'tailbase-token': put.body.token,
        });
      expect((await search('gardening')).body.hits.map((h: { key: string }) => h.key)).toEqual([
        's2',
      ]);
      expect((await search('tomatoes')).body.hits).toEqual([]);
    });

    it("sets a collection's cleanup policy and retention as its topic's configs", async () => {
      const collection = freshCollection('events');
      const put = await call(url, 'PUT', `/v1/collections/${collection}/settings`, {
        searchable: ['text'],
        cleanupPolicy: 'delete',
        retentionMs: 3_600_000,
      });
      expect(put.status).toBe(200);
      expect(put.body.settings).toEqual({
        searchable: ['text'],
        weights: {},
        tokenizer: 'unicode61 remove_diacritics 2',
        filterable: [],
        sortable: [],
      });
      expect(put.body.topicConfigs).toMatchObject({
        cleanupPolicy: 'delete',
        retentionMs: 3_600_000,
      });
      // A config the log refuses leaves everything as it was: no settings record, same configs.
      const before = await logEnds(url);
      const bad = await call(url, 'PUT', `/v1/collections/${collection}/settings`, {
        searchable: ['title'],
        retentionMs: 'soon',
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('invalid_topic_config');
      expect(await logEnds(url)).toEqual(before);
      const again = await call(url, 'PUT', `/v1/collections/${collection}/settings`, {
        searchable: ['text'],
      });
      expect(again.body.topicConfigs).toMatchObject({
        cleanupPolicy: 'delete',
        retentionMs: 3_600_000,
      });
    });

    it('PATCH settings merges the fields it names; a bad one changes nothing', async () => {
      const collection = freshCollection('merge');
      const settingsPath = `/v1/collections/${collection}/settings`;
      const put = await call(url, 'PUT', settingsPath, {
        searchable: ['title'],
        weights: { title: 2 },
        retentionMs: 86_400_000,
        cleanupPolicy: 'delete',
      });
      expect(put.status).toBe(200);
      const patch = await call(url, 'PATCH', settingsPath, { filterable: ['year'] });
      expect(patch.status).toBe(200);
      const merged = {
        searchable: ['title'],
        weights: { title: 2 },
        tokenizer: 'unicode61 remove_diacritics 2',
        filterable: ['year'],
        sortable: [],
      };
      expect(patch.body.settings).toEqual(merged);
      expect(patch.body.topicConfigs).toMatchObject({ retentionMs: 86_400_000 });
      const read = await call(url, 'GET', settingsPath);
      expect(read.status).toBe(200);
      expect(read.body.settings).toEqual(merged);
      // The merged settings are those the serve-nodes apply: a filter on `year` works at once.
      const doc = await call(
        url,
        'PUT',
        `/v1/collections/${collection}/docs/d1`,
        { title: 'dune', year: 1965 },
        { 'tailbase-token': patch.body.token },
      );
      const filtered = await call(
        url,
        'GET',
        `/v1/collections/${collection}/search?q=dune&filter=${encodeURIComponent('year = 1965')}`,
        undefined,
        { 'tailbase-token': doc.body.token },
      );
      expect(filtered.status).toBe(200);
      expect(filtered.body.hits.map((h: { key: string }) => h.key)).toEqual(['d1']);
      const before = await logEnds(url);
      for (const bad of [{ filterable: ['year'], colour: 'red' }, { weights: 'heavy' }, [1]]) {
        const refused = await call(url, 'PATCH', settingsPath, bad);
        expect(refused.status, JSON.stringify(bad)).toBe(400);
        expect(refused.body.error.code).toBe('invalid_settings');
      }
      const unknown = await call(url, 'PATCH', settingsPath, { colour: 'red' });
      expect(unknown.body.error.message).toContain('colour');
      expect(await logEnds(url)).toEqual(before);
      expect((await call(url, 'GET', settingsPath)).body.settings).toEqual(merged);
      const reset = await call(url, 'PATCH', settingsPath, { weights: null, searchable: null });
      expect(reset.body.settings).toEqual({ ...merged, searchable: null, weights: {} });
      // With wait=applied, every serve-node sorts by the new field before the answer comes.
      const sortable = await call(url, 'PATCH', `${settingsPath}?wait=applied`, {
        sortable: ['year'],
      });
      expect(sortable.status).toBe(200);
      const sorted = await call(url, 'GET', `/v1/collections/${collection}/docs?sort=year:asc`);
      expect(sorted.status).toBe(200);
      expect(sorted.body.items.map((item: { key: string }) => item.key)).toEqual(['d1']);
    });

    it('wait=applied answers once searchable; a bad wait or wait_ms writes nothing', async () => {
      const collection = freshCollection('waited');
      const items = Array.from({ length: 30 }, (_, i) => ({
        key: `k${i}`,
        value: { t: 'wombat' },
      }));
      const bulk = await call(
        url,
        'POST',
        `/v1/collections/${collection}/docs?wait=applied`,
        items,
      );
      expect(bulk.status).toBe(200);
      // No token, no consistency: what the serve-nodes have applied now already holds them all.
      const found = await call(url, 'GET', `/v1/collections/${collection}/search?q=wombat&limit=1`);
      expect(found.body.total).toBe(items.length);
      const put = await call(
        url,
        'PUT',
        `/v1/collections/${collection}/docs/one?wait=applied&wait_ms=5000`,
        { t: 'numbat' },
      );
      expect(put.status).toBe(200);
      expect((await call(url, 'GET', `/v1/collections/${collection}/docs/one`)).status).toBe(200);
      const del = await call(url, 'DELETE', `/v1/collections/${collection}/docs/one?wait=applied`);
      expect(del.status).toBe(200);
      expect((await call(url, 'GET', `/v1/collections/${collection}/docs/one`)).status).toBe(404);
      const before = await logEnds(url);
      for (const query of [
        'wait=soon',
        'wait=applied&wait_ms=-1',
        'wait=applied&wait_ms=x',
        'wait_ms=10',
      ]) {
        const bad = await call(url, 'PUT', `/v1/collections/${collection}/docs/bad?${query}`, {});
        expect(bad.status, query).toBe(400);
        expect(bad.body.error.code, query).toBe('invalid_parameter');
        expect(bad.body.error.parameter, query).toMatch(/^wait/);
      }
      const badBulk = await call(url, 'POST', `/v1/collections/${collection}/docs?wait=now`, items);
      expect(badBulk.status).toBe(400);
      expect(await logEnds(url)).toEqual(before);
    });

    it('answers every read with the document as written, numbers unrounded', async () => {
      // JSON.parse rounds 12345678901234567891 to ...7000 and -0 to 0: nothing between the body
      // written and the bodies read may parse and re-serialise the document.
      const text = '{"t":"exactprobe words",\n "big":12345678901234567891,"z":-0,"f":1.50e300}';
      const put = await fetch(`${url}/v1/collections/exact/docs/n`, { method: 'PUT', body: text });
      expect(put.status).toBe(200);
      const token = put.headers.get('tailbase-token')!;
      const read = async (
        path: string,
        headers: Record<string, string> = { 'tailbase-token': token },
      ) => {
        const response = await fetch(url + path, { headers });
        expect(response.status).toBe(200);
        return response.text();
      };
      const numbers = '"big":12345678901234567891,"z":-0,"f":1.50e300';
      expect(await read('/v1/collections/exact/docs/n')).toContain(numbers);
      expect(await read('/v1/collections/exact/docs')).toContain(numbers);
      expect(await read('/v1/collections/exact/search?q=exactprobe')).toContain(numbers);
      // From the log start: the write's own token would start the feed after it.
      const feed = await read(`/v1/changes?collection=exact&limit=1`, {});
      expect(feed.trim().split('\n')).toHaveLength(1);
      expect(feed).toContain(numbers);
      expect(JSON.parse(feed)).toMatchObject({ key: 'n', value: { t: 'exactprobe words' } });
    });

    it('streams the change feed and resumes exactly after the last token', async () => {
      const a = await call(url, 'POST', '/v1/collections/feed/docs', [
        { key: 'a', value: { v: 1 } },
        { key: 'b', value: { v: 2 } },
        { key: 'c', value: { v: 3 } },
      ]);
      expect(a.status).toBe(200);
      const first = await readFeed('/v1/changes?collection=feed&limit=2');
      expect(first).toHaveLength(2);
      const resume = first[1].token;
      await call(url, 'DELETE', '/v1/collections/feed/docs/a');
      await call(url, 'PUT', '/v1/collections/feed/docs/d', { v: 4 });
      const rest = await readFeed(`/v1/changes?collection=feed&limit=3&token=${resume}`);
      const events = [...first, ...rest].map((e) => `${e.key}:${JSON.stringify(e.value)}`);
      expect(new Set(events).size).toBe(5);
      expect(events.sort()).toEqual(['a:null', 'a:{"v":1}', 'b:{"v":2}', 'c:{"v":3}', 'd:{"v":4}']);
      for (const event of rest) {
        expect(event).toMatchObject({ collection: 'feed', partition: expect.any(Number) });
      }
      // per partition, offsets strictly increase across the two connections
      const byPartition = new Map<number, number>();
      for (const e of [...first, ...rest]) {
        expect(e.offset).toBeGreaterThan(byPartition.get(e.partition) ?? -1);
        byPartition.set(e.partition, e.offset);
      }
    });

    it('serves the feed as SSE and resumes from Last-Event-ID over the URL token', async () => {
      const all = await readFeed('/v1/changes?collection=feed&limit=5');
      const sseEvents = (text: string) => ({
        ids: [...text.matchAll(/^id: (.+)$/gm)].map((m) => m[1]),
        data: [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1])),
      });
      // An EventSource reconnects to the URL it opened, token and all, adding Last-Event-ID.
      const path = `/v1/changes?collection=feed&limit=2&token=${all[0].token}`;
      const first = await fetch(url + path, { headers: { accept: 'text/event-stream' } });
      expect(first.headers.get('content-type')).toContain('text/event-stream');
      const opened = sseEvents(await first.text());
      expect(opened.data).toHaveLength(2);
      // The opening id (the starting position), then one per event.
      expect(opened.ids).toHaveLength(3);
      const resumed = await fetch(url + path, {
        headers: { accept: 'text/event-stream', 'last-event-id': opened.ids[2] },
      });
      const rest = sseEvents(await resumed.text()).data;
      const key = (e: { partition: number; offset: number }) => `${e.partition}:${e.offset}`;
      const seen = [...opened.data, ...rest].map(key);
      expect(new Set(seen).size).toBe(4);
      expect(seen.sort()).toEqual(all.slice(1).map(key).sort());
    });

    it('an SSE stream opened at the log end resumes from its opening id', async () => {
      const controller = new AbortController();
      const response = await fetch(`${url}/v1/changes?collection=late&from=now`, {
        headers: { accept: 'text/event-stream' },
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      let opening = '';
      while (!opening.includes('\n\n')) {
        opening += new TextDecoder().decode((await reader.read()).value);
      }
      controller.abort();
      const id = /^id: (.+)$/m.exec(opening)![1];
      // Written while the consumer is away, after the stream it opened had started.
      await call(url, 'PUT', '/v1/collections/late/docs/k', { v: 1 });
      const resumed = await fetch(`${url}/v1/changes?collection=late&from=now&limit=1`, {
        headers: { accept: 'text/event-stream', 'last-event-id': id },
      });
      const data = JSON.parse((await resumed.text()).match(/^data: (.+)$/m)![1]);
      expect(data).toMatchObject({ collection: 'late', key: 'k', value: { v: 1 } });
    });

    it('from=now starts at the end of the log', async () => {
      const controller = new AbortController();
      const response = await fetch(`${url}/v1/changes?from=now&collection=feed&limit=1`, {
        signal: controller.signal,
      });
      const put = await call(url, 'PUT', '/v1/collections/feed/docs/late', { v: 9 });
      const line = JSON.parse((await response.text()).trim());
      expect(line).toMatchObject({ key: 'late', offset: put.body.offset });
    });

    it('a strong read sees a write acknowledged to another client', async () => {
      const put = await call(url, 'PUT', '/v1/collections/strong/docs/x', { v: 'new' });
      expect(put.status).toBe(200);
      const get = await call(url, 'GET', '/v1/collections/strong/docs/x?consistency=strong');
      expect(get.body).toMatchObject({ value: { v: 'new' }, offset: put.body.offset });
    });

    it('refuses an oversize body over a real socket by its declared length, writing nothing', async () => {
      const before = await logEnds(url);
      const body = JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) });
      const response = await fetch(`${url}/v1/collections/big/docs/k`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
        body,
      });
      expect(response.status).toBe(413);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
        'document_too_large',
      );
      expect(await logEnds(url)).toEqual(before);
    });

    it('answers every request with its request id, and reads and writes with their token, refusals too', async () => {
      const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
      const ask = async (method: string, path: string, headers: Record<string, string> = {}) => {
        const response = await fetch(url + path, {
          method,
          headers: { 'content-type': 'application/json', ...headers },
          body: method === 'PUT' ? JSON.stringify({ v: 1 }) : undefined,
        });
        await response.arrayBuffer();
        const header = (name: string) => response.headers.get(name);
        return {
          status: response.status,
          id: header('x-request-id'),
          token: header('tailbase-token'),
          type: header('content-type'),
        };
      };
      const put = await ask('PUT', '/v1/collections/heads/docs/a', { 'x-request-id': 'mine-1' });
      expect(put).toMatchObject({ status: 200, id: 'mine-1', type: expect.stringMatching(/json/) });
      expect(put.token).toMatch(/^[A-Za-z0-9_-]+$/);
      const token = { 'tailbase-token': put.token as string };
      const answers = await Promise.all([
        ask('GET', '/v1/collections/heads/docs/a', token),
        ask('GET', '/v1/collections/heads/docs/none', token),
        ask('GET', '/v1/collections/heads/docs?limit=5', token),
        ask('GET', '/v1/collections/heads/docs?limit=500', token),
        ask('GET', '/v1/collections/heads/search?q=nothing', token),
      ]);
      expect(answers.map(({ status }) => status)).toEqual([200, 404, 200, 200, 200]);
      for (const answer of answers) {
        expect(answer.id).toMatch(UUID);
        expect(answer.token).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(answer.type).toMatch(/^application\/json/);
      }
      const refused = await ask('GET', '/v1/collections/heads/docs/a?consistency=bad', {
        'x-request-id': 'mine-2',
      });
      expect(refused).toMatchObject({ status: 400, id: 'mine-2', token: null });
      const unknown = await ask('GET', '/v1/nowhere', { 'x-request-id': 'not a sane id' });
      expect(unknown.status).toBe(404);
      expect(unknown.id).toMatch(UUID);
    });

    it('a brand-new collection reads its first write at the token, by key and by search', async () => {
      const collection = freshCollection('newborn');
      const put = await call(url, 'PUT', `/v1/collections/${collection}/docs/first`, {
        body: 'hatchling words',
      });
      expect(put.status).toBe(200);
      const headers = { 'tailbase-token': put.token! };
      const get = await call(url, 'GET', `/v1/collections/${collection}/docs/first`, undefined, {
        ...headers,
      });
      expect(get.body).toEqual({
        key: 'first',
        value: { body: 'hatchling words' },
        offset: put.body.offset,
      });
      const search = await call(
        url,
        'GET',
        `/v1/collections/${collection}/search?q=hatchling`,
        undefined,
        headers,
      );
      expect(search.status).toBe(200);
      expect(search.body.hits.map((h: { key: string }) => h.key)).toEqual(['first']);
      // Its bulk twin: a second new collection, written in bulk, scanned at the token.
      const other = freshCollection('newbulk');
      const bulk = await call(url, 'POST', `/v1/collections/${other}/docs`, [
        { key: 'a', value: { n: 1 } },
        { key: 'b', value: { n: 2 } },
      ]);
      expect(bulk.status).toBe(200);
      const scan = await call(url, 'GET', `/v1/collections/${other}/docs?token=${bulk.token}`);
      expect(scan.body.items.map((item: { key: string }) => item.key)).toEqual(['a', 'b']);
    });

    it("one collection's token does not make reads of another wait", async () => {
      const status = await call(url, 'GET', '/v1/status');
      const codec = new TokenCodec(status.body.clusterId, target.partitions);
      // A token far ahead of a collection that exists, and one naming a collection never written.
      await call(url, 'PUT', '/v1/collections/patient/docs/p', { v: 1 });
      // Far ahead on the partition of key `p`, the one a read of it waits for.
      const pPartition = partitionFor('p', target.partitions);
      const ahead = codec.encode(collectionOffsets('patient', new Map([[pPartition, 1e12]])));
      const absent = codec.encode(collectionOffsets('never-written', new Map([[0, 1e12]])));
      const put = await call(url, 'PUT', '/v1/collections/bystander/docs/b', { v: 2 });
      // The bystander's own write is waited for when its token is sent...
      const get = await call(url, 'GET', '/v1/collections/bystander/docs/b', undefined, {
        'tailbase-token': put.token!,
      });
      expect(get.body).toMatchObject({ value: { v: 2 }, offset: put.body.offset });
      // ...and tokens that name only other collections ask nothing of it: a wait for offset 1e12
      // could only end in a 504, so a 200 proves the read did not wait for it.
      for (const token of [ahead, absent]) {
        const read = await call(
          url,
          'GET',
          `/v1/collections/bystander/docs/b?token=${token}&wait_ms=3000&consistency=token`,
        );
        expect(read.status).toBe(200);
        const scan = await call(url, 'GET', `/v1/collections/bystander/docs?token=${token}`);
        expect(scan.status).toBe(200);
      }
      // While the collection the token names waits for it, and says so.
      const waited = await call(
        url,
        'GET',
        `/v1/collections/patient/docs/p?token=${ahead}&wait_ms=200`,
      );
      expect(waited.status).toBe(504);
    });

    it('a feed of every collection takes in a collection created while it runs', async () => {
      const collection = freshCollection('joiner');
      const controller = new AbortController();
      const response = await fetch(`${url}/v1/changes?from=now&limit=1`, {
        signal: controller.signal,
      });
      expect(response.status).toBe(200);
      const put = await call(url, 'PUT', `/v1/collections/${collection}/docs/j`, { v: 1 });
      expect(put.status).toBe(200);
      const line = JSON.parse((await response.text()).trim());
      expect(line).toMatchObject({
        collection,
        key: 'j',
        value: { v: 1 },
        offset: put.body.offset,
      });
    });

    it('reports status, health, readiness and metrics', async () => {
      const status = await call(url, 'GET', '/v1/status');
      type Row = { topic: string; partition: number; replicas: unknown[] };
      const rows = status.body.partitions as Row[];
      const notes = rows.filter((p) => p.topic === 'notes');
      expect(notes.map((p) => p.partition)).toEqual(
        Array.from({ length: target.partitions }, (_, p) => p),
      );
      expect(rows.some((p) => p.topic === SETTINGS_TOPIC)).toBe(true);
      expect(status.body.serveNodes).toHaveLength(target.serveNodes);
      for (const p of rows.filter((row) => !row.topic.startsWith('__'))) {
        expect(p.replicas, `${p.topic}/${p.partition}`).toHaveLength(1);
      }
      expect(JSON.stringify(status.body)).not.toContain('127.0.0.1');
      // Internal topics are marked, and only collections count in the sums and rows.
      type Marked = Row & { internal: boolean };
      for (const p of rows as Marked[]) expect(p.internal, p.topic).toBe(p.topic.startsWith('__'));
      // The consumer groups' topic is the log's own, not under a prefix tailbase names its with.
      expect(rows.some((p) => p.topic === '__consumer_offsets')).toBe(!target.topicPrefix);
      type CollectionRow = { collection: string; partitions: number; lagRecords: number };
      const collections = status.body.collections as CollectionRow[];
      expect(collections.map((row) => row.collection)).toContain('notes');
      expect(collections.some((row) => row.collection.startsWith('__'))).toBe(false);
      expect(collections.find((row) => row.collection === 'notes')).toMatchObject({
        partitions: target.partitions,
        state: expect.stringMatching(/^(tailing|replaying)$/),
      });
      expect(status.body.lagRecords).toBe(
        collections.reduce((sum, row) => sum + row.lagRecords, 0),
      );
      expect(typeof status.body.ready).toBe('boolean');
      expect(status.body.version).toMatch(/^\d+\.\d+\.\d+/);
      expect((await call(url, 'GET', '/healthz')).status).toBe(200);
      expect((await call(url, 'GET', '/readyz')).status).toBe(200);
      const metrics = await fetch(`${url}/metrics`).then((r) => r.text());
      expect(metrics).toContain('tailbase_gateway_requests_total');
      expect(metrics).toContain('tailbase_gateway_batch_records_bucket');
      expect(metrics).toContain('tailbase_gateway_partition_lag_records');
    });

    it('lists collections; drops one: its documents, settings and tokens go, the name starts anew', async () => {
      const collection = freshCollection('dropped');
      const docs = `/v1/collections/${collection}/docs`;
      const patched = await call(url, 'PATCH', `/v1/collections/${collection}/settings`, {
        filterable: ['n'],
      });
      expect(patched.status).toBe(200);
      const items = Array.from({ length: 20 }, (_, i) => ({
        key: `k${i}`,
        value: { n: i, t: 'old' },
      }));
      const bulk = await call(url, 'POST', `${docs}?wait=applied`, items, {
        'tailbase-token': patched.token!,
      });
      expect(bulk.status).toBe(200);
      const oldToken = bulk.token!;
      const listed = await call(url, 'GET', '/v1/collections');
      expect(listed.status).toBe(200);
      type Summary = {
        collection: string;
        documents: number | null;
        settingsVersion: number | null;
      };
      const row = (listed.body.collections as Summary[]).find((c) => c.collection === collection);
      expect(row).toMatchObject({
        incarnation: 0,
        partitions: target.partitions,
        records: 20,
        documents: 20,
        settingsVersion: expect.any(Number),
      });
      expect(
        (listed.body.collections as Summary[]).some((c) => c.collection.startsWith('__')),
      ).toBe(false);

      // Bad drops change nothing.
      const before = await logEnds(url);
      const missing = await call(url, 'DELETE', '/v1/collections/never-written-here');
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('collection_not_found');
      const internal = await call(url, 'DELETE', '/v1/collections/__tailbase_settings');
      expect(internal.status).toBe(400);
      expect(internal.body.error.code).toBe('invalid_collection');
      expect(await logEnds(url)).toEqual(before);

      const dropped = await call(url, 'DELETE', `/v1/collections/${collection}`);
      expect(dropped.status).toBe(200);
      expect(dropped.body).toMatchObject({ collection, dropped: true, incarnation: 0 });
      const after = await call(url, 'GET', '/v1/collections');
      expect((after.body.collections as Summary[]).map((c) => c.collection)).not.toContain(
        collection,
      );
      expect((await call(url, 'GET', `/v1/collections/${collection}/settings`)).status).toBe(404);
      // Its old token is refused, naming the problem, rather than waited on (a wait would end
      // in a 504 after wait_ms; no clock is needed to tell the two apart).
      const stale = await call(url, 'GET', `${docs}/k1?wait_ms=5000`, undefined, {
        'tailbase-token': oldToken,
      });
      expect(stale.status).toBe(400);
      expect(stale.body.error).toMatchObject({
        code: 'invalid_token',
        reason: 'dropped_collection',
      });
      expect(stale.body.error.message).toContain('dropped');
      expect((await call(url, 'GET', `${docs}/k1`)).status).toBe(404);

      // The same name again: a new collection, empty but for its own write, default settings.
      const again = await call(url, 'PUT', `${docs}/fresh?wait=applied`, { n: 1, t: 'new' });
      expect(again.status).toBe(200);
      const scan = await call(url, 'GET', docs, undefined, { 'tailbase-token': again.token! });
      expect(scan.body.items.map((item: { key: string }) => item.key)).toEqual(['fresh']);
      const settings = await call(url, 'GET', `/v1/collections/${collection}/settings`);
      expect(settings.body.settings.filterable).toEqual([]);
      const reread = await call(url, 'GET', `${docs}/k1`, undefined, {
        'tailbase-token': oldToken,
      });
      expect(reread.status).toBe(400);
      const relisted = await call(url, 'GET', '/v1/collections');
      expect(
        (relisted.body.collections as Summary[]).find((c) => c.collection === collection),
      ).toMatchObject({ incarnation: 1, documents: 1, records: 1 });
    });

    it("says each collection's bytes on disk: log, LMDB, SQLite; they grow with a bulk write and go with a drop", async () => {
      const collection = freshCollection('sized');
      const docs = `/v1/collections/${collection}/docs`;
      type Bytes = { log: number; lmdb: number; sqlite: number; total: number };
      const bytesOf = async (): Promise<Bytes | undefined> => {
        const listed = await call(url, 'GET', '/v1/collections');
        expect(listed.status).toBe(200);
        const rows = listed.body.collections as { collection: string; bytes: Bytes }[];
        return rows.find((row) => row.collection === collection)?.bytes;
      };
      // A serve-node measures its stores again only after a rest ten times the last measurement
      // (milliseconds here), so a listing just after a write may show the bytes of before it.
      const bytesOnce = async (ready: (bytes: Bytes) => boolean): Promise<Bytes> => {
        const deadline = Date.now() + BYTES_WAIT_MS_MAX;
        for (;;) {
          const bytes = await bytesOf();
          if ((bytes !== undefined && ready(bytes)) || Date.now() > deadline) return bytes!;
          await new Promise((resolve) => setTimeout(resolve, BYTES_POLL_MS));
        }
      };
      const first = await call(url, 'PUT', `${docs}/d0?wait=applied`, { text: 'one small note' });
      expect(first.status).toBe(200);
      const small = await bytesOnce((bytes) => bytes.lmdb > 0 && bytes.sqlite > 0);
      for (const part of ['log', 'lmdb', 'sqlite'] as const) {
        expect(small[part]).toBeGreaterThan(0);
      }
      expect(small.total).toBe(small.log + small.lmdb + small.sqlite);

      const DOCS = 400;
      const TEXT_BYTES = 1_000;
      const words = ['river', 'stone', 'maple', 'ember', 'quartz', 'harbor', 'lantern', 'meadow'];
      const items = Array.from({ length: DOCS }, (_, i) => ({
        key: `d${i + 1}`,
        value: {
          title: `${words[i % words.length]} ${i}`,
          text: Array.from({ length: TEXT_BYTES / 10 }, (_, j) => `${words[(i * j) % 8]}${j}`)
            .join(' ')
            .slice(0, TEXT_BYTES),
        },
      }));
      const bulk = await call(url, 'POST', `${docs}?wait=applied`, items);
      expect(bulk.status).toBe(200);
      const written = items.reduce((sum, item) => sum + JSON.stringify(item.value).length, 0);
      expect(written).toBeGreaterThan((DOCS * TEXT_BYTES) / 2);
      const loaded = await bytesOnce((bytes) => bytes.lmdb - small.lmdb > written);
      if (target.logCompression === 'gzip') {
        // These texts repeat eight words: gzip stores them in well under half their bytes.
        expect(loaded.log - small.log).toBeGreaterThan(0);
        expect(loaded.log - small.log).toBeLessThan(written / 2);
      } else {
        expect(loaded.log - small.log).toBeGreaterThan(written);
      }
      expect(loaded.lmdb - small.lmdb).toBeGreaterThan(written);
      expect(loaded.sqlite).toBeGreaterThan(small.sqlite);
      expect(loaded.total).toBe(loaded.log + loaded.lmdb + loaded.sqlite);

      expect((await call(url, 'DELETE', `/v1/collections/${collection}`)).status).toBe(200);
      expect(await bytesOf()).toBeUndefined();
      // Under the same name again, one document: the dropped one's bytes are not counted.
      const again = await call(url, 'PUT', `${docs}/d0?wait=applied`, { text: 'one small note' });
      expect(again.status).toBe(200);
      const renewed = await bytesOnce((bytes) => bytes.lmdb < written / 10);
      expect(renewed.log).toBeLessThan(written / 100);
      expect(renewed.lmdb).toBeLessThan(written / 10);
      expect(renewed.sqlite).toBeLessThan(loaded.sqlite);
    });

    it('status says rebuilding from the moment a rebuild is accepted, then catches up', async () => {
      const put = await call(url, 'PUT', '/v1/collections/rebuilt/docs/r1', { t: 'before' });
      // A strong scan first waits for every partition on every serve-node, so each one tails the
      // collection when the rebuild starts (a token read would wake only the node of r1's partition).
      const scan = await call(url, 'GET', '/v1/collections/rebuilt/docs?consistency=strong');
      expect(scan.status).toBe(200);
      expect((scan.body.items as { key: string }[]).map((item) => item.key)).toEqual(['r1']);
      // A load the node is still applying when the rebuild comes, so its fetchers are busy.
      const load = Array.from({ length: 1000 }, (_, i) => ({ key: `b${i}`, value: { i } }));
      expect((await call(url, 'POST', '/v1/collections/rebuilt/docs', load)).status).toBe(200);
      const rebuild = await call(url, 'POST', '/v1/admin/serve-nodes/0/rebuild');
      expect(rebuild.status).toBe(202);
      const status = await call(url, 'GET', '/v1/status');
      type Replica = { node: number; state: string };
      type Row = { topic: string; internal: boolean; replicas: Replica[] };
      const onNode0 = (status.body.partitions as Row[])
        .filter((row) => !row.internal)
        .flatMap((row) => row.replicas.filter((r) => r.node === 0));
      expect(onNode0.length).toBeGreaterThan(0);
      for (const replica of onNode0) expect(replica.state).toBe('rebuilding');
      const rebuilt = (status.body.collections as { collection: string; state: string }[]).find(
        (row) => row.collection === 'rebuilt',
      );
      expect(rebuilt?.state).toBe('rebuilding');
      expect(status.body.ready).toBe(false);
      // The replayed node serves the write again; its token waits for the replay.
      const get = await call(
        url,
        'GET',
        '/v1/collections/rebuilt/docs/r1?wait_ms=20000',
        undefined,
        {
          'tailbase-token': put.token!,
        },
      );
      expect(get.body.value).toEqual({ t: 'before' });
    });
  });
}
