// Proves that a view's topic is written only by its processor, at the log itself: kcat -P (a
// Kafka client nobody here wrote) producing to a view's topic, to the topic of a view's version
// being rebuilt, or to one of a view declared a moment before, is refused with POLICY_VIOLATION
// and changes nothing (the topics' end offsets and the view's documents stay), while the same
// kcat produces to the source and the view takes the record in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaBrokerOf, kcat, KCAT_INSTALLED } from '../harness/kafka.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 4;
const CLIENT_TIMEOUT = ['-X', 'message.timeout.ms=10000', '-X', 'socket.timeout.ms=10000'];

describe.skipIf(!KCAT_INSTALLED)("views: a Kafka produce to a view's topic is refused", () => {
  let embedded: SpawnedEmbedded;
  let url: string;
  let broker: string;

  beforeAll(async () => {
    embedded = await spawnEmbedded({ partitions: PARTITIONS, args: ['--kafka-port', '0'] });
    url = embedded.url;
    broker = kafkaBrokerOf(embedded.output());
  });

  afterAll(async () => {
    await embedded?.stop();
  });

  /** kcat -P of one keyed JSON record; answers its failure's text, or null when it was acked. */
  const produce = async (
    topic: string,
    key: string,
    value: unknown,
    headers: string[] = [],
  ): Promise<string | null> => {
    const args = ['-P', '-b', broker, '-t', topic, '-K', '\t', '-X', 'partitioner=murmur2_random'];
    for (const header of headers) args.push('-H', header);
    try {
      await kcat([...args, ...CLIENT_TIMEOUT], { input: `${key}\t${JSON.stringify(value)}\n` });
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  };

  const endsOf = async (topic: string) => {
    const status = await call(url, 'GET', '/v1/status');
    return (status.body.partitions as { topic: string; partition: number; endOffset: number }[])
      .filter((p) => p.topic === topic)
      .map((p) => [p.partition, p.endOffset]);
  };

  const viewDocs = async () => {
    const page = await call(url, 'GET', '/v1/collections/per_country/docs?consistency=strong');
    expect(page.status).toBe(200);
    return page.body.items;
  };

  it('refuses it with POLICY_VIOLATION and changes nothing; the source takes kcat writes', async () => {
    expect(
      (await call(url, 'PUT', '/v1/collections/sales/docs/s1', { country: 'FR' })).status,
    ).toBe(200);
    const definition = { from: 'sales', groupBy: ['country'], aggregates: { n: 'count()' } };
    // Produced right after the declaration's answer: the log-node knows the view at once.
    expect((await call(url, 'PUT', '/v1/views/per_country', definition)).status).toBe(200);
    const refused = await produce('per_country', '["FR"]', { country: 'FR', n: 1000 });
    expect(refused).toMatch(/[Pp]olicy violation/);
    // Once the processor has written what it has to (a strong read waits for it), nothing moves.
    await viewDocs();
    const before = await endsOf('per_country');
    expect(await produce('per_country', '["FR"]', { country: 'FR', n: 1000 })).toMatch(
      /[Pp]olicy violation/,
    );
    expect(await endsOf('per_country')).toEqual(before);
    expect(await viewDocs()).toEqual([
      expect.objectContaining({ key: '["FR"]', value: { country: 'FR', n: 1 } }),
    ]);

    // A version being rebuilt has its own topic: refused there too.
    const redefined = await call(url, 'PUT', '/v1/views/per_country', {
      ...definition,
      aggregates: { n: 'count()', m: 'count()' },
    });
    expect(redefined.status).toBe(200);
    const { topic } =
      redefined.body.rebuilding ?? (await call(url, 'GET', '/v1/views/per_country')).body;
    expect(await produce(topic, '["FR"]', { country: 'FR', n: 1000 })).toMatch(
      /[Pp]olicy violation/,
    );

    // The source is a collection: kcat's record is taken, and the view counts it.
    expect(await produce('sales', 's2', { country: 'FR' })).toBeNull();
    for (let polls = 0; polls < 200; polls++) {
      const docs = await viewDocs();
      if (docs[0]?.value?.m === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(await viewDocs()).toEqual([
      expect.objectContaining({ key: '["FR"]', value: { country: 'FR', n: 2, m: 2 } }),
    ]);
    // The new version's topic, which serves now (the old one is gone), holds no refused record.
    const consume = ['-C', '-b', broker, '-t', topic, '-e', '-f', '%s\n', ...CLIENT_TIMEOUT];
    const values = (await kcat(consume)).trim().split('\n').filter(Boolean);
    expect(values.length).toBeGreaterThan(0);
    expect(values.filter((value) => value.includes('1000'))).toEqual([]);
  });

  // A header of view fencing in a collection would read as an epoch to every serve-node applying
  // it, and fence out every later ordinary write to that partition: only the processor sends one.
  it('refuses a record carrying an epoch or claim header with INVALID_RECORD, changing nothing', async () => {
    expect(await produce('forged', 'a', { n: 1 })).toBeNull();
    const before = await endsOf('forged');
    for (const header of ['tailbase-epoch=9007199254740991', 'tailbase-claim=']) {
      expect(await produce('forged', 'a', { n: 2 }, ['other=x', header])).toMatch(
        /failed to validate record/,
      );
    }
    expect(await endsOf('forged')).toEqual(before);
    expect(await produce('forged', 'a', { n: 3 }, ['other=x'])).toBeNull();
    const read = await call(url, 'GET', '/v1/collections/forged/docs/a?consistency=strong');
    expect(read.body.value).toEqual({ n: 3 });
  });
});
