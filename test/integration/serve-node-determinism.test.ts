// Proves replica determinism: a serve-node rebuilt from an empty data dir, one started from a
// snapshot taken mid-stream, and one wiped by the admin rebuild all hold exactly the documents of
// one that ran throughout, and return the same top-20 hits with the same scores (and the same
// filtered, sorted and faceted answers), though settings
// changed between the writes and a replica applies the settings topic and the collection's topic
// in whatever interleaving its fetchers meet them. The log is written and tailed over the log-node's
// Kafka listener.
import { afterAll, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { type ServedDocument, type WaitFor } from '../../shared/serve-api.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { openLogNode } from '../../log-node/index.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import { keysIn, seededRandom, testSeed, tempDir, type TempDir } from '../harness/index.js';
import { settingsApplied } from '../harness/serve-fixture.js';

const silent = createLogger('test', 'silent');
const WORDS = (
  'log offset partition replica snapshot index search rank token wait apply batch record ' +
  'durable fsync leader follower segment compaction retention stream table café naïve über'
).split(' ');
const QUERIES = ['log', 'snapshot index', '"apply batch"', 'seg*', 'cafe OR naive', 'rank -token'];
/** Filtered, sorted and faceted searches on the fields the last settings make filterable. */
const FIELD_QUERIES = [
  { q: 'log', filter: 'year > 1980 AND tags EXISTS', facets: 'tags,year' },
  { q: 'index OR search', sort: 'year:desc', facets: 'title' },
  {
    q: 'record',
    filter: 'NOT tags IN [log, rank] OR year 1960 TO 1970',
    sort: 'title:asc,year:asc',
  },
];
const dirs: TempDir[] = [];
const nodes: Array<{ stop(): Promise<void> }> = [];

afterAll(async () => {
  for (const node of nodes.reverse()) await node.stop();
  for (const dir of dirs) dir.cleanup();
});

function dir(name: string): TempDir {
  const made = tempDir(name);
  dirs.push(made);
  return made;
}

async function allDocs(client: HttpServeClient, waitFor: WaitFor): Promise<ServedDocument[]> {
  const docs: ServedDocument[] = [];
  let after: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await client.scan('notes', { after, limit: 1000, waitFor, waitMs: 20_000 });
    docs.push(...result.items);
    if (!result.more) return docs;
    after = result.items[result.items.length - 1].key;
  }
  throw new Error('scan did not end within 100 pages');
}

async function topHits(client: HttpServeClient, waitFor: WaitFor, settingsEnd: number) {
  await settingsApplied(client, settingsEnd);
  const answers = [];
  for (const q of QUERIES) {
    const result = await client.search('notes', { q, limit: 20, waitFor, waitMs: 20_000 });
    answers.push({
      q,
      total: result.total,
      hits: result.hits.map((h) => [h.key, h.score, h.offset]),
    });
  }
  for (const query of FIELD_QUERIES) {
    const result = await client.search('notes', { ...query, limit: 20, waitFor, waitMs: 20_000 });
    answers.push({
      q: JSON.stringify(query),
      total: result.total,
      hits: result.hits.map((h) => [h.key, h.score, h.offset, h.sort]),
      facets: result.facets,
    });
  }
  return answers;
}

describe('serve-node determinism', () => {
  it('rebuilt, snapshot-started and running replicas agree on documents and rankings', async () => {
    const random = seededRandom(testSeed('serve-node determinism'));
    const logNode = await openLogNode({
      dataDir: dir('det-log').path,
      partitions: 2,
      logger: silent,
      kafka: { host: '127.0.0.1', port: 0 },
    });
    nodes.push(logNode);
    const broker = `127.0.0.1:${logNode.kafkaPort}`;
    const log = await KafkaLogClient.connect({ bootstrap: [broker], logger: silent });
    nodes.push({ stop: async () => log.close() });
    const start = async (name: string, extra: { fromSnapshot?: string } = {}) => {
      const node: RunningServeNode = await startServeNode({
        dataDir: dir(name).path,
        logUrls: [`kafka://${broker}`],
        logger: silent,
        // Every word of more than one document gets a top-k list, so one-word searches read them.
        limits: { searchTopkListedDfMin: 2 },
        ...extra,
      });
      nodes.push(node);
      return new HttpServeClient(node.url);
    };
    const running = await start('det-running');
    const end: Record<number, number> = { 0: -1, 1: -1 };
    // A key lives in one partition, the one Kafka's partitioner puts it in (the listener refuses
    // any other): 201 keys of each.
    const keysOf = [0, 1].map((partition) => keysIn(partition, 2, 201, 'k'));
    const appendRound = async (round: number) => {
      for (let b = 0; b < 10; b++) {
        const partition = random.int(0, 1);
        const records: LogRecord[] = Array.from({ length: random.int(1, 60) }, () => {
          const key = keysOf[partition][random.int(0, 200)];
          const text = Array.from({ length: random.int(3, 30) }, () => random.pick(WORDS)).join(
            ' ',
          );
          const value =
            random.next() < 0.1
              ? null
              : {
                  title: random.pick(WORDS),
                  body: { text },
                  round,
                  year: random.int(1950, 2020),
                  ...(random.next() < 0.7
                    ? { tags: [random.pick(WORDS), random.pick(WORDS)] }
                    : {}),
                };
          return {
            key,
            value: value && Buffer.from(JSON.stringify(value)),
            timestampMs: 1,
          };
        });
        end[partition] = (await log.append('notes', partition, encodeBatch(records))).lastOffset;
      }
    };
    let settingsEnd = -1;
    const setSettings = async (settings: object) => {
      const value = Buffer.from(JSON.stringify(settings));
      settingsEnd = (
        await log.append(SETTINGS_TOPIC, 0, encodeBatch([{ key: 'notes', value, timestampMs: 1 }]))
      ).lastOffset;
    };
    await appendRound(0);
    await setSettings({ weights: { title: 3 }, filterable: ['round'], sortable: ['round'] });
    await appendRound(1);
    await running.get('notes', 'k0', { waitFor: { ...end }, waitMs: 20_000 });
    await settingsApplied(running, settingsEnd);
    const snapshotDir = dir('det-snapshot').path + '/snap';
    const snapshot = await running.snapshot(snapshotDir);
    expect(snapshot.applied).toEqual({
      'notes/0': end[0] + 1,
      'notes/1': end[1] + 1,
      [`${SETTINGS_TOPIC}/0`]: settingsEnd + 1,
    });
    await appendRound(2);
    await setSettings({
      searchable: ['title', 'body'],
      tokenizer: 'porter unicode61 remove_diacritics 2',
    });
    await appendRound(3);
    await setSettings({
      searchable: ['body', 'title'],
      weights: { body: 2 },
      filterable: ['year', 'tags', 'title'],
      sortable: ['year', 'title'],
    });
    await appendRound(4);

    const waitFor = { ...end };
    const expectedDocs = await allDocs(running, waitFor);
    const expectedHits = await topHits(running, waitFor, settingsEnd);
    expect(expectedDocs.length).toBeGreaterThan(100);
    expect(expectedHits.every((answer) => answer.hits.length > 0)).toBe(true);
    expect(expectedHits.filter((answer) => answer.facets !== undefined)).toHaveLength(2);

    const rebuilt = await start('det-rebuilt');
    const fromSnapshot = await start('det-from-snapshot', { fromSnapshot: snapshotDir });
    for (const replica of [rebuilt, fromSnapshot]) {
      expect(await allDocs(replica, waitFor)).toEqual(expectedDocs);
      expect(await topHits(replica, waitFor, settingsEnd)).toEqual(expectedHits);
    }
    await running.rebuild();
    expect((await running.status()).lastRebuild?.reason).toBe('admin_request');
    expect(await allDocs(running, waitFor)).toEqual(expectedDocs);
    expect(await topHits(running, waitFor, settingsEnd)).toEqual(expectedHits);
  });
});
