// Proves that a cluster member whose task reads back a claim above its own gives the task back to
// the views group and is dealt it again, so the view does not stall: the claim is one another
// member's retried claim would leave, landing after this member's (that member has since been
// told it lost the view and runs nothing). The member stops the task, rejoins, is dealt the task
// again (it holds its state), claims anew and resumes: a write after the claim reaches the view,
// which equals a recomputation from the source log. Without the rejoin the deposed task stayed
// dealt to it, run by no one, and its frontiers never moved again. A log-node in-process with its
// Kafka listener and the cluster secret, one member of the views group over Kafka (as a
// serve-node's view processor).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { VIEW_WRITER_USERNAME } from '../../shared/view-api.js';
import { epochOf } from '../../shared/view-epoch.js';
import { ViewHost } from '../../views/view-host.js';
import { GroupPlacement } from '../../views/view-placement.js';
import { sleep } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { expectedView, readSourceDocuments } from './view-check.js';
import { capturingLogger, viewAsApplied, writeOrders } from './view-host-harness.js';
import { appendLateClaim } from './view-task-rig.js';

const PARTITIONS = 2;
const VIEW = 'per_country';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const SECRET = 'views-deposed-secret';
/** A rejoin and a rebalance of one member, then a round. */
const WAIT_MS = 30_000;

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe('a member whose view task was claimed by another is dealt it again', () => {
  const dir = tempDir('views-deposed');
  let node: OpenLogNode;
  let client: KafkaLogClient;
  let host: ViewHost | null = null;
  let version = 0;
  const { logger, lines } = capturingLogger('info');
  const write = (orders: [key: string, country: string][]) =>
    writeOrders(node.client, PARTITIONS, orders);
  /** Waits until the view processed the source to its end; answers its progress. */
  const caughtUp = async () => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const ends = (await node.client.offsets()).filter((o) => o.topic === 'orders');
      const progress = host!.progress(VIEW, version);
      const through = ends.every(
        (e) => (progress?.frontiers[e.partition]?.frontier ?? -1) >= e.endOffset,
      );
      if (through) return progress!;
      expect(Date.now(), `caught up: ${JSON.stringify(progress)}`).toBeLessThan(deadline);
      await sleep(50);
    }
  };
  const viewTopic = () => viewAsApplied(node.client, VIEW, PARTITIONS);
  /** The greatest claim in partition 0 of the view's topic. */
  const lastClaim = async () => {
    const read = await node.client.read(VIEW, 0, 0, { maxBytes: 1 << 20 });
    const claims = [...iterateBatches(read.batches)]
      .flatMap((b) => decodeRecords(b.bytes))
      .filter((r) => epochOf(r)?.claim === true);
    return claims.at(-1)!.offset;
  };

  beforeAll(async () => {
    node = await openLogNode({
      dataDir: `${dir.path}/log`,
      partitions: PARTITIONS,
      clusterSecret: SECRET,
      logger,
      kafka: { host: '127.0.0.1', port: 0 },
    });
    client = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${node.kafkaPort}`],
      sasl: { username: VIEW_WRITER_USERNAME, password: SECRET },
      logger,
    });
    await write([
      ['o1', 'FR'],
      ['o2', 'DE'],
      ['o3', 'FR'],
    ]);
    // As the gateway declares a view: its topic first, then its record.
    await node.client.ensureTopic(VIEW);
    version = (
      await node.client.append(
        VIEWS_TOPIC,
        0,
        encodeBatch([{ key: VIEW, value: encode(DEFINITION), timestampMs: Date.now() }]),
      )
    ).baseOffset;
    host = await ViewHost.start({
      log: client,
      dataDir: `${dir.path}/views`,
      logger,
      limits: { fetchWaitMs: 50 },
      placement: new GroupPlacement({
        log: client,
        logger,
        limits: { sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000 },
        retryMs: 200,
      }),
    });
  }, WAIT_MS);

  afterAll(async () => {
    await host?.stop();
    client?.close();
    await node?.stop();
    dir.cleanup();
  });

  it(
    'stops on the later claim, rejoins, resumes and keeps the view exact',
    async () => {
      await caughtUp();
      // Another member's claim, retried, landing after this member's.
      const theirs = await appendLateClaim(node.client, VIEW, PARTITIONS, 0);
      const deadline = Date.now() + WAIT_MS;
      let deposedAt = -1;
      while (deposedAt === -1) {
        expect(Date.now(), 'the task read the claim back').toBeLessThan(deadline);
        await sleep(50);
        deposedAt = lines.findIndex((line) => line.includes('view claimed by another processor'));
      }
      await write([
        ['o4', 'IT'],
        ['o2', 'FR'],
      ]);
      const progress = await caughtUp();
      // Dealt again by the group (not restarted by itself) and claimed anew, above the other's
      // claim, resuming from its state.
      const dealt = lines
        .slice(deposedAt)
        .filter((line) => line.includes('view tasks of this member'))
        .map((line) => (JSON.parse(line) as { tasks: string[] }).tasks);
      expect(dealt.at(-1)).toEqual([`${VIEW}@${version}`]);
      expect(await lastClaim()).toBeGreaterThan(theirs);
      expect(progress.frontiers.every((f) => f.resumedFrom !== undefined)).toBe(true);
      const expected = expectedView(
        DEFINITION,
        await readSourceDocuments(node.client, 'orders', PARTITIONS),
      );
      const published = Date.now() + WAIT_MS;
      while (
        JSON.stringify(Object.fromEntries(await viewTopic())) !==
        JSON.stringify(Object.fromEntries(expected))
      ) {
        expect(Date.now(), 'the view equals a recomputation').toBeLessThan(published);
        await sleep(50);
      }
    },
    2 * WAIT_MS,
  );
});
