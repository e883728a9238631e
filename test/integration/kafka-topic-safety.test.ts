// tailbase refuses topics that would break invariant 1 or co-partitioning, on a Kafka
// implementation nobody here wrote (librdkafka's mock cluster, which has no DescribeConfigs or
// CreateTopics): `tailbase start --log kafka://<mock>` says it cannot check min.insync.replicas
// and stops unless --allow-unverified-topics; with it, a topic of replication factor 1 (on a
// one-broker cluster: the mock makes every broker a replica of every topic) or a partition count
// unlike the others stops it, and a collection whose topic someone else made unlike the others
// is refused at its first write; each error names the topic, the setting and its value.
import { execFile } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnEmbedded } from '../harness/embedded.js';
import { mockClusterAvailable, startMockCluster, type MockCluster } from '../harness/kafka-mock.js';
import { TAILBASE_BIN } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { call } from './gateway-harness.js';

/** How long a start that must fail may take: it fails on its first Metadata. */
const FAILED_START_WAIT_MS_MAX = 30_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function mock(brokers: number, ...commands: string[]): Promise<MockCluster> {
  const cluster = await startMockCluster(brokers);
  cleanups.push(() => cluster.stop());
  for (const command of commands) await cluster.command(command);
  return cluster;
}

/** `tailbase start` that must fail: its exit code and what it said on stderr. */
function failedStart(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const data = tempDir('topic-safety');
  cleanups.push(() => data.cleanup());
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [TAILBASE_BIN, 'start', '--data', data.path, '--port', '0', ...args],
      { timeout: FAILED_START_WAIT_MS_MAX, env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn' } },
      (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }),
    );
  });
}

describe.skipIf(!mockClusterAvailable())("topic settings on librdkafka's mock cluster", () => {
  it("refuses to start where the cluster cannot say its topics' settings, unless allowed", async () => {
    const cluster = await mock(3, 'topic orders 3 3', 'topic __tailbase_settings 1 3');
    const refused = await failedStart(['--log', `kafka://${cluster.bootstrap}`]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('has no DescribeConfigs or CreateTopics');
    expect(refused.stderr).toContain('min.insync.replicas');
    expect(refused.stderr).toContain('--allow-unverified-topics');
  });

  it('refuses to start on a topic of replication factor 1, naming it', async () => {
    const cluster = await mock(1, 'topic tb-orders 3 1', 'topic tb-__tailbase_settings 1 1');
    const refused = await failedStart([
      '--log',
      `kafka://${cluster.bootstrap}`,
      '--allow-unverified-topics',
      '--topic-prefix',
      'tb-',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'topic tb-orders has replication.factor 1; tailbase needs at least 3',
    );
  });

  it('refuses to start on a collection topic whose partition count is unlike the others', async () => {
    const cluster = await mock(
      3,
      'topic apples 3 3',
      'topic pears 4 3',
      'topic __tailbase_settings 1 3',
    );
    const refused = await failedStart([
      '--log',
      `kafka://${cluster.bootstrap}`,
      '--allow-unverified-topics',
      '--partitions',
      '3',
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('topic pears has partitions 4; tailbase needs 3');
  });

  it('takes --kafka-replication-factor 1 on a one-replica topic it was told to accept', async () => {
    const cluster = await mock(1, 'topic orders 3 1', 'topic __tailbase_settings 1 1');
    const embedded = await spawnEmbedded({
      args: [
        '--log',
        `kafka://${cluster.bootstrap}`,
        '--allow-unverified-topics',
        '--kafka-replication-factor',
        '1',
        '--kafka-min-insync-replicas',
        '1',
      ],
    });
    cleanups.push(() => embedded.stop());
    const put = await call(embedded.url, 'PUT', '/v1/collections/orders/docs/o1', { n: 1 });
    expect(put.status).toBe(200);
  });

  it('setTopicConfigs where the cluster has no CreateTopics: 404 for a missing topic, configs refused', async () => {
    const cluster = await mock(3, 'topic orders 3 3', 'topic __tailbase_settings 1 3');
    const log = await KafkaLogClient.connect({
      bootstrap: cluster.bootstrap.split(','),
      allowUnverifiedTopics: true,
    });
    cleanups.push(() => log.close());
    const failure = (call: Promise<unknown>) =>
      call.then(
        () => null,
        (e: unknown) => e,
      );
    expect((await log.setTopicConfigs('orders', {})).partitions).toBe(3);
    for (const configs of [{}, { retentionMs: 60_000 }]) {
      expect(await failure(log.setTopicConfigs('absent', configs))).toMatchObject({
        status: 404,
        code: 'unknown_topic',
      });
    }
    expect(await failure(log.setTopicConfigs('orders', { retentionMs: 60_000 }))).toMatchObject({
      status: 502,
      code: 'log_unsupported',
    });
    expect(await failure(log.ensureTopic('absent'))).toMatchObject({
      status: 502,
      code: 'topics_unverified',
    });
    // Configs the cluster cannot set are refused before the topic is checked: an odd topic's
    // are log_unsupported, not its partition count.
    await cluster.command('topic odd 4 3');
    for (const refused of [
      () => log.setTopicConfigs('odd', { retentionMs: 60_000 }),
      () => log.ensureTopic('odd', { retentionMs: 60_000 }),
    ]) {
      expect(await failure(refused())).toMatchObject({ status: 502, code: 'log_unsupported' });
    }
    expect((await log.topics()).map((topic) => topic.name)).not.toContain('absent');
  });

  it('refuses the first write to a collection whose topic another made unlike the others', async () => {
    const cluster = await mock(3, 'topic orders 3 3', 'topic __tailbase_settings 1 3');
    const embedded = await spawnEmbedded({
      args: ['--log', `kafka://${cluster.bootstrap}`, '--allow-unverified-topics'],
    });
    cleanups.push(() => embedded.stop());
    const good = await call(embedded.url, 'PUT', '/v1/collections/orders/docs/o1', { n: 1 });
    expect(good.status).toBe(200);
    await cluster.command('topic odd 4 3');
    const refused = await call(embedded.url, 'PUT', '/v1/collections/odd/docs/t1', { n: 1 });
    expect(refused.status).toBe(502);
    expect(refused.body.error).toMatchObject({
      code: 'topic_misconfigured',
      topic: 'odd',
      setting: 'partitions',
      value: '4',
    });
    // A collection with no topic cannot be created where the cluster has no CreateTopics.
    const missing = await call(embedded.url, 'PUT', '/v1/collections/fresh/docs/f1', { n: 1 });
    expect(missing.status).toBe(502);
    expect(missing.body.error.code).toBe('topics_unverified');
    expect(missing.body.error.message).toContain('create it (replication factor 3');
  });
});
