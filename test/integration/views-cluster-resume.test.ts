// Proves that a cluster member dealt a view whose state it kept resumes from that state instead
// of replaying the source from its start, and that the view stays exact: a log-node, two
// serve-nodes and a gateway as processes, a grouped view over 10^4 documents. The owner is
// killed -9 and restarted within the session timeout: it is dealt the view again and its
// published progress says it resumed from the offsets it had processed (resumedFrom), so it
// fetched only what was written since. Then the owner is killed for longer than a session, the
// other member takes the view over (rebuilt from the start), writes move and delete documents,
// the first member comes back and is dealt the view again when the other stops: it resumes from
// its old checkpoint, behind what the other member appended, and the view equals a brute-force
// recomputation from the source log after each step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom, testSeed } from '../harness/random.js';
import { sleep } from '../harness/spawn-node.js';
import { call } from './gateway-harness.js';
import { expectedView, readSourceDocuments } from './view-check.js';
import { caughtUpView } from './view-harness.js';
import { startViewsCluster, type ViewsCluster } from './views-cluster-harness.js';

const PARTITIONS = 4;
const VIEW = 'per_country';
const SOURCE = 'orders';
const DEFINITION = {
  from: SOURCE,
  groupBy: ['country'],
  aggregates: { n: 'count()', revenue: 'sum(total)', top: 'max(total)' },
};
const COUNTRIES = Array.from({ length: 20 }, (_, i) => `C${String(i).padStart(2, '0')}`);
const DOCS = 10_000;
const BULK_DOCS = 2_000;
/**
 * Long enough that a member restarted at once is back before its old session ends, on a loaded
 * machine: the group then deals its view to it again rather than to the other member.
 */
const SESSION_MS = 15_000;
/** A session, the rebalance after it, and a rebuild of the view. */
const TAKEOVER_MS_MAX = 90_000;

type Frontier = { partition: number; frontier: number; resumedFrom?: number };

describe('a cluster member dealt a view whose state it kept resumes from it', () => {
  const random = seededRandom(testSeed('views cluster resume'));
  let cluster: ViewsCluster;
  let task = '';

  const bulk = async (docs: { key: string; value: unknown }[]) => {
    for (let i = 0; i < docs.length; i += BULK_DOCS) {
      const answer = await call(
        cluster.gateway.url,
        'POST',
        `/v1/collections/${SOURCE}/docs`,
        docs.slice(i, i + BULK_DOCS),
      );
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
  };
  const order = (i: number) => ({
    key: `o${i}`,
    value: { country: random.pick(COUNTRIES), total: random.int(1, 10_000) / 100 },
  });
  /** Moves `count` random documents to other countries and deletes every order of `emptied`. */
  const churn = async (count: number, emptied: string) => {
    const source = await sourceDocuments();
    const moved = Array.from({ length: count }, () => order(random.int(0, DOCS - 1)));
    const deleted = [...source.values()]
      .filter((d) => d.doc.country === emptied)
      .map((d) => ({ key: d.key, value: null }));
    await bulk([...moved.filter((m) => m.value.country !== emptied), ...deleted]);
  };

  const sourceDocuments = async () => {
    const client = await cluster.kafka.connect();
    try {
      return await readSourceDocuments(client, SOURCE, PARTITIONS);
    } finally {
      client.close();
    }
  };
  const expectBruteForce = async () => {
    const expected = expectedView(DEFINITION, await sourceDocuments());
    const served = await caughtUpView(cluster.gateway.url, VIEW, SOURCE);
    expect(served.size).toBe(expected.size);
    expect(Object.fromEntries(served)).toEqual(Object.fromEntries(expected));
  };
  const published = async (): Promise<Frontier[]> =>
    (await cluster.publishedThroughSourceEnds(VIEW, SOURCE, TAKEOVER_MS_MAX))
      .frontiers as Frontier[];
  const fetchedSince = (frontiers: Frontier[]) =>
    frontiers.reduce((sum, f) => sum + f.frontier - (f.resumedFrom ?? 0), 0);

  beforeAll(async () => {
    cluster = await startViewsCluster({
      name: 'views-resume',
      partitions: PARTITIONS,
      secret: 'views-resume-secret',
      serveNodes: 2,
      serveArgs: [
        ...['--view-session-timeout-ms', String(SESSION_MS), '--view-heartbeat-ms', '500'],
      ],
    });
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('resumes from its checkpoint after kill -9 and a restart within the session', async () => {
    await bulk(Array.from({ length: DOCS }, (_, i) => order(i)));
    const declared = await call(cluster.gateway.url, 'PUT', `/v1/views/${VIEW}`, DEFINITION);
    expect(declared.status).toBe(200);
    task = `${VIEW}@${declared.body.version as number}`;
    const owner = await cluster.waitForOwner(task, [0, 1], TAKEOVER_MS_MAX);
    const before = await published();
    expect(before.every((f) => f.resumedFrom === undefined)).toBe(true);
    expect(fetchedSince(before)).toBe(DOCS);

    await cluster.serves[owner]!.kill('SIGKILL');
    cluster.serves[owner] = null;
    await cluster.startServe(owner);
    await churn(500, 'C19');
    expect(await cluster.waitForOwner(task, [owner], TAKEOVER_MS_MAX)).toBe(owner);
    const after = await published();
    // It began from exactly what it had processed before the kill: it fetched only what was
    // written since, not the 10^4 documents before.
    expect(after.map((f) => f.resumedFrom)).toEqual(before.map((f) => f.frontier));
    const fetched = fetchedSince(after);
    console.info(`resumed after kill -9: fetched ${fetched} source records, not ${DOCS + fetched}`);
    expect(fetched).toBeLessThan(DOCS / 2);
    await expectBruteForce();
  }, 240_000);

  it('resumes from an old checkpoint after the other member ran the view meanwhile', async () => {
    const first = await cluster.waitForOwner(task, [0, 1], TAKEOVER_MS_MAX);
    const other = 1 - first;
    const checkpoint = await published();
    await cluster.serves[first]!.kill('SIGKILL');
    cluster.serves[first] = null;
    await churn(500, 'C18');
    // Past the session: the other member is dealt the view, and rebuilds it from the start.
    expect(await cluster.waitForOwner(task, [other], TAKEOVER_MS_MAX)).toBe(other);
    const rebuilt = await published();
    expect(rebuilt.every((f) => f.resumedFrom === undefined)).toBe(true);
    await churn(500, 'C17');
    // Back, holding its old state: the other member runs the view and keeps it.
    const back = await cluster.startServe(first);
    const deadline = Date.now() + TAKEOVER_MS_MAX;
    while (!back.output().includes('view tasks of this member')) {
      expect(Date.now(), 'the restarted member joined the views group').toBeLessThan(deadline);
      await sleep(100);
    }
    expect(cluster.ownerOf(task, [first, other])).toBe(other);
    await churn(500, 'C16');
    await published();
    // The other member leaves: the first is dealt the view and resumes from its old state,
    // behind what the other appended; what it appends after catching up makes the view exact.
    await cluster.serves[other]!.stop();
    cluster.serves[other] = null;
    // A write its frontiers must pass: what the other member published last does not.
    await churn(100, 'C16');
    expect(await cluster.waitForOwner(task, [first], TAKEOVER_MS_MAX)).toBe(first);
    const resumed = await published();
    expect(resumed.map((f) => f.resumedFrom)).toEqual(checkpoint.map((f) => f.frontier));
    await expectBruteForce();
    await churn(200, 'C15');
    await published();
    await expectBruteForce();
  }, 400_000);
});
