import fs from 'node:fs';
import path from 'node:path';
import { afterAll } from 'vitest';
import { startLogNode, type LogNodeOptions, type RunningLogNode } from '../../log-node/index.js';
import {
  startServeNode,
  type RunningServeNode,
  type ServeNodeOptions,
} from '../../serve-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import type { ServeClient } from '../../shared/serve-api.js';
import type { LogClient } from '../../shared/log-api.js';
import { partitionFor } from '../../shared/partitioner.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { tempDir } from './temp-dir.js';

const silent = createLogger('test', 'silent');

/**
 * Until the serve-node has applied the settings topic past `lastOffset` and finished the
 * re-indexes those records started: a read waits on that topic only when asked to
 * (`settingsWaitFor`), so a test that changed settings asks status.
 */
export async function settingsApplied(
  serve: ServeClient,
  lastOffset: number,
  waitMs = 20_000,
): Promise<void> {
  for (const deadline = Date.now() + waitMs; Date.now() < deadline;) {
    const status = await serve.status();
    const settings = status.partitions.find((p) => p.topic === SETTINGS_TOPIC);
    const reindexing = status.reindexing ?? [];
    if (settings !== undefined && settings.applied > lastOffset && reindexing.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(
    `the settings topic was not applied past ${lastOffset}, re-indexes done, within ${waitMs} ms`,
  );
}

/**
 * Until the serve-node has applied `topic` through `lastOffsets` (partition to offset), however
 * long that takes while it keeps going: a replay's time follows the machine's load, so what fails
 * is no partition advancing within `stallMsMax`, not a total bound.
 */
export async function appliedThrough(
  serve: ServeClient,
  topic: string,
  lastOffsets: Record<number, number>,
  stallMsMax = 20_000,
): Promise<void> {
  let progressAt = Date.now();
  let last = -1;
  for (;;) {
    const partitions = (await serve.status()).partitions.filter((p) => p.topic === topic);
    const applied = partitions.reduce((sum, p) => sum + p.applied, 0);
    if (applied > last) [last, progressAt] = [applied, Date.now()];
    const done = Object.entries(lastOffsets).every(
      ([partition, offset]) =>
        (partitions.find((p) => p.partition === Number(partition))?.applied ?? 0) > offset,
    );
    if (done) return;
    if (Date.now() - progressAt > stallMsMax) {
      throw new Error(`${topic} stalled at ${applied} records applied for ${stallMsMax} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A log-node and a serve-node over temp directories, each started (silent, any free port) by
 * `startLog` / `startServe` with the test's options on top, both stopped and removed after the
 * file. The serve-node and the test's log client reach the log-node by its Kafka listener.
 */
export function logAndServeNodes(name: string) {
  const nodes = {
    logDir: tempDir(`${name}-log`),
    serveDir: tempDir(`${name}-serve`),
    logNode: undefined as RunningLogNode | undefined,
    serveNode: undefined as RunningServeNode | undefined,
    logClient: undefined as KafkaLogClient | undefined,
    /** The running log-node's Kafka listener as `--log` names it. */
    logUrl(): string {
      return `kafka://127.0.0.1:${nodes.logNode!.kafkaPort}`;
    },
    async startLog(options: Omit<LogNodeOptions, 'dataDir'> = {}): Promise<KafkaLogClient> {
      nodes.logNode = await startLogNode({
        dataDir: nodes.logDir.path,
        port: 0,
        logger: silent,
        kafka: { host: '127.0.0.1', port: 0 },
        ...options,
      });
      nodes.logClient?.close();
      nodes.logClient = await KafkaLogClient.connect({
        bootstrap: [`127.0.0.1:${nodes.logNode.kafkaPort}`],
        logger: silent,
      });
      return nodes.logClient;
    },
    /** On the running log-node; stop the previous serve-node first. */
    async startServe(options: Partial<ServeNodeOptions> = {}): Promise<HttpServeClient> {
      nodes.serveNode = await startServeNode({
        dataDir: nodes.serveDir.path,
        logUrls: [nodes.logUrl()],
        logger: silent,
        ...options,
      });
      return new HttpServeClient(nodes.serveNode.url);
    },
    /** The serve-node's store generations (`stores-<n>` directories). */
    storeDirs(): string[] {
      return fs
        .readdirSync(nodes.serveDir.path)
        .filter((name) => name.startsWith('stores-'))
        .map((name) => path.join(nodes.serveDir.path, name));
    },
    /**
     * Documents a..d of collection `c` (`{text: "word<i>"}`), each in its partition by Kafka's
     * partitioner (of 2 partitions: a, b and c in 0, d in 1); answers the wait_for that covers
     * them.
     */
    async appendFourWords(log: LogClient): Promise<Record<number, number>> {
      const partitions = (await log.cluster()).partitions;
      const waitFor: Record<number, number> = {};
      const docs = ['a', 'b', 'c', 'd'].map((key, i) => ({
        key,
        value: Buffer.from(JSON.stringify({ text: `word${i}` })),
        timestampMs: 1,
      }));
      for (let partition = 0; partition < partitions; partition++) {
        const mine = docs.filter((doc) => partitionFor(doc.key, partitions) === partition);
        if (mine.length === 0) continue;
        waitFor[partition] = (await log.append('c', partition, encodeBatch(mine))).lastOffset;
      }
      return waitFor;
    },
  };
  afterAll(async () => {
    nodes.logClient?.close();
    await nodes.serveNode?.stop();
    await nodes.logNode?.stop();
    nodes.serveDir.cleanup();
    nodes.logDir.cleanup();
  });
  return nodes;
}
