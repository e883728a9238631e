/**
 * compose.yaml's three log-nodes, run as real processes from its own definition (their ports
 * moved to free ones, nothing else changed), are one Kafka cluster: a client bootstrapped on one
 * of them, with SASL/PLAIN and compose's API key, appends to and reads back every partition, and
 * a serve-node and a gateway given `--log kafka://` and the SASL flags serve through them; and
 * compose's own serve-nodes and gateway are given exactly that (run-like-a-user.test.ts runs them).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readComposeServices } from '../../bin/compose-services.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { freePort } from '../harness/free-port.js';
import { keysIn } from '../harness/keys.js';
import { spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { call } from './gateway-harness.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = tempDir('compose-kafka');
let nodes: SpawnedNode[] = [];
let kafkaPorts: number[] = [];
let apiKey = '';

beforeAll(async () => {
  const services = readComposeServices(path.join(ROOT, 'compose.yaml'), dir.path, {}).filter(
    (service) => service.args[0] === 'log-node',
  );
  expect(services.map((s) => s.name)).toEqual(['log-1', 'log-2', 'log-3']);
  // compose's fixed ports (HTTP and Kafka) become free ones, the same in every service's flags.
  const fixed = new Set(
    services.flatMap((s) =>
      ['--port', '--kafka-port'].map((flag) => s.args[s.args.indexOf(flag) + 1]),
    ),
  );
  const moved = new Map<string, string>();
  for (const port of fixed) moved.set(port, String(await freePort()));
  const remap = (arg: string) => arg.replace(/\b\d{4,5}\b/g, (port) => moved.get(port) ?? port);
  nodes = await Promise.all(
    services.map((service) =>
      spawnNode(service.args[0], service.args.slice(1).map(remap), { env: service.env }),
    ),
  );
  kafkaPorts = services.map((s) => Number(remap(s.args[s.args.indexOf('--kafka-port') + 1])));
  apiKey = services[0].env.TAILBASE_API_KEYS.split(':')[0];
});

afterAll(async () => {
  await Promise.all(nodes.map((node) => node.stop()));
  dir.cleanup();
});

describe("compose.yaml's log-nodes as one Kafka cluster", () => {
  it('a client bootstrapped on log-3 reaches every partition, with SASL/PLAIN', async () => {
    const log = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${kafkaPorts[2]}`],
      sasl: { username: 'test', password: apiKey },
      bootstrapWaitMs: 10_000,
    });
    try {
      const cluster = await log.cluster();
      expect(cluster).toMatchObject({ clusterId: '01JFBK3ZQ8Y5V6N7W2X4C9D0E1', partitions: 6 });
      await log.ensureTopic('compose');
      const producer = await log.initProducerId();
      for (let partition = 0; partition < cluster.partitions; partition++) {
        const [key] = keysIn(partition, cluster.partitions);
        const batch = encodeBatch([{ key, value: Buffer.from('{}'), timestampMs: 1 }], {
          ...producer,
          baseSequence: 0,
        });
        expect(await log.append('compose', partition, batch)).toMatchObject({ baseOffset: 0 });
      }
      const offsets = (await log.offsets()).filter((o) => o.topic === 'compose');
      expect(offsets.map((o) => [o.partition, o.endOffset])).toEqual(
        [0, 1, 2, 3, 4, 5].map((p) => [p, 1]),
      );
      expect(log.fetchGroups([0, 1, 2, 3, 4, 5])).toEqual([
        [0, 3],
        [1, 4],
        [2, 5],
      ]);
    } finally {
      log.close();
    }
  });
  it("compose's serve-nodes and gateway reach the log by kafka:// only, signed in with an API key", () => {
    const clients = readComposeServices(path.join(ROOT, 'compose.yaml'), dir.path, {}).filter(
      (service) => service.args.includes('--log'),
    );
    expect(clients.map((s) => s.name).sort()).toEqual(['gateway', 'serve-1', 'serve-2']);
    for (const { name, args, env } of clients) {
      expect(args[args.indexOf('--log') + 1], name).toBe(
        'kafka://127.0.0.1:9191,127.0.0.1:9192,127.0.0.1:9193',
      );
      expect(env.TAILBASE_KAFKA_SASL_PASSWORD, name).toBe(apiKey);
      expect(env.TAILBASE_KAFKA_SASL_USERNAME, name).toBeTruthy();
    }
  });

  it('a serve-node and a gateway on --log kafka:// with SASL flags serve writes and reads', async () => {
    const kafkaUrl = `kafka://${kafkaPorts.map((port) => `127.0.0.1:${port}`).join(',')}`;
    const sasl = ['--kafka-sasl-username', 'test', '--kafka-sasl-password', apiKey];
    const serveDir = tempDir('compose-kafka-serve');
    const serve = await spawnNode('serve-node', [
      ...['--data', serveDir.path, '--port', '0', '--log', kafkaUrl],
      ...sasl,
    ]);
    const gateway = await spawnNode('gateway', [
      ...['--port', '0', '--log', kafkaUrl, '--serve', serve.url],
      ...sasl,
    ]);
    try {
      const put = await call(gateway.url, 'PUT', '/v1/collections/notes/docs/a', { t: 'hi' });
      expect(put.status).toBe(200);
      const got = await call(gateway.url, 'GET', '/v1/collections/notes/docs/a', undefined, {
        'tailbase-token': put.token!,
      });
      expect(got).toMatchObject({ status: 200, body: { value: { t: 'hi' } } });
    } finally {
      await gateway.stop();
      await serve.stop();
      serveDir.cleanup();
    }
  });
});
