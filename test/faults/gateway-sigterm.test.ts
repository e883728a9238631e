// Proves DESIGN.md's clean shutdown at the gateway: SIGTERM while keep-alive clients write nonstop
// answers every write the log took. Once the clients hold 4 acks each on average the gateway gets
// SIGTERM; after it exits, each record in the log was answered 200 to its client (none cut off by
// a reset connection) and each 200 is in the log. The serve-node and the gateway reach the log by
// the Kafka protocol, and the log is read back the same way.
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { freePort } from '../harness/free-port.js';
import {
  readPartition,
  recordsOf,
  sleep,
  spawnNode,
  type SpawnedNode,
  tempDir,
  type TempDir,
} from '../harness/index.js';

const PARTITIONS = 4;
/** The collection the clients write, and so the log topic its records are in. */
const COLLECTION = 'sd';
const CLIENTS = 48;
const ACKS_BEFORE_STOP = 4 * CLIENTS;
const LOAD_MS_MAX = 20_000;

const dirs: TempDir[] = [];
const nodes: SpawnedNode[] = [];
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((node) => node.kill()));
  for (const dir of dirs.splice(0)) dir.cleanup();
});

async function start(role: string, args: string[], waitReady = true) {
  const node = await spawnNode(role, args, { waitReady });
  nodes.push(node);
  return node;
}

/** One PUT on a keep-alive socket: its status, or the error that ended it. */
function put(agent: http.Agent, url: string, key: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = http.request(`${url}/v1/collections/${COLLECTION}/docs/${key}`, {
      method: 'PUT',
      agent,
      headers: { 'content-type': 'application/json' },
    });
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    request.end(JSON.stringify({ key }));
  });
}

describe('gateway under SIGTERM', () => {
  it('answers every write the log took before it exits', async () => {
    const logDir = tempDir('sigterm-log');
    const serveDir = tempDir('sigterm-serve');
    dirs.push(logDir, serveDir);
    const kafkaPort = await freePort();
    const broker = `127.0.0.1:${kafkaPort}`;
    await start('log-node', [
      ...['--data', logDir.path, '--port', '0', '--partitions', String(PARTITIONS)],
      ...['--kafka-port', String(kafkaPort)],
    ]);
    const serve = await start('serve-node', [
      ...['--data', serveDir.path, '--port', '0', '--log', `kafka://${broker}`],
    ]);
    const gateway = await start('gateway', [
      ...['--port', '0', '--log', `kafka://${broker}`, '--serve', serve.url],
    ]);

    const answered = new Map<string, number | string>();
    let stopping = false;
    const client = async (id: number) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (let i = 0; ; i++) {
        const key = `c${id}-${i}`;
        const outcome = await put(agent, gateway.url, key);
        answered.set(key, outcome);
        if (outcome !== 200 && stopping) break;
      }
      agent.destroy();
    };
    const clients = Array.from({ length: CLIENTS }, (_, id) => client(id));
    // Writes in flight on every connection, on a quiet machine or a loaded one.
    const acks = () => [...answered.values()].filter((outcome) => outcome === 200).length;
    const loadedBy = performance.now() + LOAD_MS_MAX;
    while (acks() < ACKS_BEFORE_STOP && performance.now() < loadedBy) await sleep(20);
    stopping = true;
    const exit = await gateway.stop();
    await Promise.all(clients);
    expect(exit.code).toBe(0);

    const logClient = await KafkaLogClient.connect({ bootstrap: [broker] });
    const stored = new Set<string>();
    try {
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const { batches } = await readPartition(logClient, COLLECTION, partition);
        for (const record of recordsOf(batches)) stored.add(record.key);
      }
    } finally {
      logClient.close();
    }
    const acknowledged = [...answered].filter(([, outcome]) => outcome === 200).map(([k]) => k);
    expect(acknowledged.length).toBeGreaterThanOrEqual(ACKS_BEFORE_STOP);
    const unanswered = [...stored].filter((key) => answered.get(key) !== 200);
    expect(unanswered.map((key) => `${key}: ${answered.get(key)}`)).toEqual([]);
    expect(acknowledged.filter((key) => !stored.has(key))).toEqual([]);
  });
});
