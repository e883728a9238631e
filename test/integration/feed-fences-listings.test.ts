// Proves a change feed of a view counts the epochs of the partitions one read answers together
// (gateway/feed-fences.ts, from gateway/changes.ts) at once, so their checks of the topic's
// incarnation share a read of the log's topics: a feed opened on a view of four partitions reads
// the topics at most twice more than its open does (a read begun before the last count ended, and
// one after it), where counting the partitions one after the other read them once a partition.
// Likewise their first counts share one listing of the log's offsets, where each partition's count
// listed every partition of every topic. A real log node with a view declared, and the gateway's
// app over its Kafka listener, the log's topic reads and offset listings counted at the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGatewayServices } from '../../gateway/services.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { epochHeader } from '../../shared/view-epoch.js';
import { interceptLog } from '../harness/index.js';
import { gatewayApp, startLog, type LogFixture } from './gateway-harness.js';

const PARTITIONS = 4;
const VIEW = 'per_country';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
/** Long enough that no re-read of the topics list comes between the feed's open and its lines. */
const FEED_TOPICS_REFRESH_MS = 600_000;
/**
 * Listings of the log's offsets a feed open makes besides the counts': the feed's own
 * (gateway/changes.ts) and the views catalog's read of its topic (shared/internal-topic-reader.ts).
 */
const OPEN_LISTINGS = 2;
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

let log: LogFixture;
beforeAll(async () => {
  log = await startLog(PARTITIONS);
  await log.node.client.ensureTopic(VIEW);
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const record = {
      key: `k${partition}`,
      value: encode({ n: partition }),
      timestampMs: Date.now(),
      headers: [epochHeader(3)],
    };
    await log.node.client.append(VIEW, partition, encodeBatch([record]));
  }
  await log.node.client.ensureTopic(VIEWS_TOPIC);
  await log.node.client.append(
    VIEWS_TOPIC,
    0,
    encodeBatch([{ key: VIEW, value: encode(DEFINITION), timestampMs: Date.now() }]),
  );
});
afterAll(() => log.stop());

/** The log client, its calls of `method` counted in `state.reads`. */
function counting(
  client: LogClient,
  method: 'topics' | 'offsets',
  state: { reads: number },
): LogClient {
  const counted = <T>(call: () => Promise<T>) => {
    state.reads += 1;
    return call();
  };
  return interceptLog(
    client,
    method === 'topics'
      ? { topics: () => counted(() => client.topics()) }
      : { offsets: () => counted(() => client.offsets()) },
  );
}

/** The calls of the log's `method` a feed opened on the view makes, to its last line. */
async function callsOnFeedOpen(method: 'topics' | 'offsets'): Promise<number> {
  const state = { reads: 0 };
  const gateway = await gatewayApp(counting(log.client, method, state), [], {
    logUrls: [log.url],
    feedTopicsRefreshMs: FEED_TOPICS_REFRESH_MS,
  });
  try {
    const before = state.reads;
    const response = await gateway.app.request(
      `/v1/changes?collection=${VIEW}&limit=${PARTITIONS}`,
    );
    expect(response.status).toBe(200);
    const lines = (await response.text()).trim().split('\n');
    expect(lines).toHaveLength(PARTITIONS);
    const calls = state.reads - before;
    console.log(`${method} calls on a feed open of ${PARTITIONS} view partitions: ${calls}`);
    return calls;
  } finally {
    await closeGatewayServices(gateway.services);
  }
}

describe("a view's change feed", () => {
  it("checks its partitions' incarnations with shared reads of the topics", async () => {
    // One read at the feed's open, then the counts' checks.
    expect(await callsOnFeedOpen('topics')).toBeLessThanOrEqual(3);
  });

  it("lists the log's offsets once for its partitions' first counts", async () => {
    expect(await callsOnFeedOpen('offsets')).toBeLessThanOrEqual(OPEN_LISTINGS + 1);
  });
});
