// Proves that a gateway killed (kill -9) in the middle of a view's first PUT leaves nothing a PUT
// again cannot mend: the gateway creates the view's topic, then appends its declaration. Killed
// before the declaration lands, it leaves an empty topic no collection declares, which the PUT
// again takes (not view_name_taken); killed after it lands, unanswered, the view is declared with
// its topic. Either way the view is then served and equals a recomputation from its source.
// Before, the declaration came first: killed between the two, the view was declared with no
// topic, the PUT again answered 200 and nothing could read it. The killed gateway reaches the log
// through a Kafka proxy that holds the declaration's Produce, or drops its answer; the PUT again
// goes to another gateway of the cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafkaProxy, type KafkaProxy, type ProduceFault } from '../harness/kafka-proxy.js';
import { spawnNode } from '../harness/spawn-node.js';
import { call } from './gateway-harness.js';
import { expectedView, readSourceDocuments } from './view-check.js';
import { caughtUpView } from './view-harness.js';
import { startViewsCluster, type ViewsCluster } from './views-cluster-harness.js';

const PARTITIONS = 2;
const SOURCE = 'orders';
const SECRET = 'views-first-put-crash-secret';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
const FAULT_WAIT_MS = 30_000;

describe("a gateway killed between a view's topic and its declaration", () => {
  let cluster: ViewsCluster;
  let proxy: KafkaProxy;
  let fault: ProduceFault | null = null;
  let faulted: () => void = () => undefined;

  beforeAll(async () => {
    cluster = await startViewsCluster({
      name: 'views-first-put-crash',
      partitions: PARTITIONS,
      secret: SECRET,
      serveNodes: 1,
      serveArgs: [],
    });
    const [host, port] = cluster.kafka.broker.split(':');
    // The next Produce after `fault` is set, which is the declaration's: a PUT of a new view
    // writes nothing else, and only the gateway under test goes through the proxy.
    const take = (): ProduceFault => {
      const taken = fault ?? 'forward';
      fault = null;
      return taken;
    };
    proxy = await startKafkaProxy({
      target: () => ({ host, port: Number(port) }),
      onProduce: take,
      onHeld: () => faulted(),
      onAnswerDropped: () => faulted(),
    });
    const answer = await call(cluster.gateway.url, 'POST', `/v1/collections/${SOURCE}/docs`, [
      { key: 'o1', value: { country: 'AT' } },
      { key: 'o2', value: { country: 'BE' } },
      { key: 'o3', value: { country: 'AT' } },
    ]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    await proxy?.close();
  });

  const expectServed = async (view: string) => {
    const client = await cluster.kafka.connect();
    try {
      const expected = expectedView(
        DEFINITION,
        await readSourceDocuments(client, SOURCE, PARTITIONS),
      );
      expect(Object.fromEntries(await caughtUpView(cluster.gateway.url, view, SOURCE))).toEqual(
        Object.fromEntries(expected),
      );
    } finally {
      client.close();
    }
  };

  for (const [at, injected] of [
    ['before the declaration lands', 'hold'],
    ['after the declaration lands, unanswered', 'drop-answer'],
  ] as const) {
    it(`a PUT again declares and serves the view (killed ${at})`, async () => {
      const view = `by_country_${injected.replace('-', '_')}`;
      const gateway = await spawnNode('gateway', [
        ...['--port', '0', '--log', `kafka://${proxy.broker}`, '--cluster-secret', SECRET],
        ...['--serve', cluster.serves[0]!.url],
      ]);
      const reached = new Promise<void>((resolve) => (faulted = resolve));
      fault = injected;
      const put = call(gateway.url, 'PUT', `/v1/views/${view}`, DEFINITION).catch(() => null);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        reached,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('no Produce reached')), FAULT_WAIT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
      expect((await gateway.kill('SIGKILL')).signal).toBe('SIGKILL');
      expect(await put).toBeNull();

      const again = await call(cluster.gateway.url, 'PUT', `/v1/views/${view}`, DEFINITION);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      const more = await call(cluster.gateway.url, 'POST', `/v1/collections/${SOURCE}/docs`, [
        { key: `${view}-o`, value: { country: 'CH' } },
      ]);
      expect(more.status).toBe(200);
      await expectServed(view);
    }, 120_000);
  }
});
