/**
 * The log-node's internal HTTP API (documented in log-node/README.md). Batches travel as raw
 * bytes both ways; everything else is JSON.
 */
import { Hono, type Context } from 'hono';
import { badRequest, TailbaseError } from '../shared/errors.js';
import { readBodyBytes } from '../shared/http-body.js';
import { integerParam, optionalInteger } from '../shared/query-params.js';
import { installErrorHandlers, requireClusterSecret } from '../shared/http-server.js';
import {
  END_OFFSET_HEADER,
  LOG_START_OFFSET_HEADER,
  type PartitionAppendOutcome,
} from '../shared/log-api.js';
import { encodeFetchAnswer } from '../shared/fetch-answer.js';
import { decodeFrames } from '../shared/partition-frames.js';
import { fetchPartitions } from './fetch.js';
import { parseFetchPositions } from './fetch-positions.js';
import type { Logger } from '../shared/logger.js';
import type { LogCleaner } from './log-cleaner.js';
import type { LogNode } from './log-node.js';

/** The body of a topic's configs: a few fields, far below this. */
const TOPIC_CONFIGS_BYTES_MAX = 64 * 1024;

export function createLogNodeApp(node: LogNode, cleaner: LogCleaner, logger: Logger): Hono {
  const app = new Hono();
  const { config } = node;
  installErrorHandlers(app, logger);

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => {
    const failed = node.failedPartitions();
    if (node.closing || failed.length > 0) {
      return c.json({ status: 'not_ready', failedPartitions: failed }, 503);
    }
    return c.json({ status: 'ready' });
  });

  app.use('/internal/*', requireClusterSecret(config.clusterSecret));

  app.get('/internal/cluster', (c) => c.json(node.clusterInfo()));
  app.get('/internal/topics', (c) => c.json({ topics: node.topics() }));

  /** Body: the configs to set (JSON, possibly empty); creates the topic when it is missing. */
  app.put('/internal/topics/:topic', async (c) => {
    const body = await readBodyBytes(
      c,
      TOPIC_CONFIGS_BYTES_MAX,
      () =>
        new TailbaseError(413, 'request_too_large', 'topic configs exceed 64 KiB', {
          max: TOPIC_CONFIGS_BYTES_MAX,
        }),
    );
    let configs: unknown = {};
    if (body.length > 0) {
      try {
        configs = JSON.parse(body.toString('utf8'));
      } catch {
        throw badRequest('invalid_topic_config', 'the body must be a JSON object of topic configs');
      }
    }
    return c.json(node.ensureTopic(c.req.param('topic'), configs as object));
  });

  app.delete('/internal/topics/:topic', async (c) => {
    await node.deleteTopic(c.req.param('topic'));
    return c.json({ deleted: c.req.param('topic') });
  });

  app.post('/internal/producer-ids', (c) => c.json(node.initProducerId()));

  app.get('/internal/offsets', (c) => c.json({ partitions: node.offsets() }));
  app.get('/internal/status', (c) => c.json(node.status()));
  app.post('/internal/admin/clean', async (c) => c.json({ partitions: await cleaner.runOnce() }));

  const batchTooLarge = (actual?: number) =>
    new TailbaseError(413, 'batch_too_large', 'batch exceeds batchBytesMax', {
      limit: 'batchBytesMax',
      max: config.batchBytesMax,
      ...(actual === undefined ? {} : { actual }),
    });
  app.post('/internal/topics/:topic/partitions/:partition/append', async (c) => {
    const body = await readBodyBytes(c, config.batchBytesMax, batchTooLarge);
    if (body.length === 0) {
      throw badRequest('invalid_batch', 'the request body must be one encoded batch');
    }
    const log = node.appendTarget(c.req.param('topic'), c.req.param('partition'), body);
    return c.json(await log.append(body));
  });

  /**
   * Batches for several topic-partitions in one call (a gateway sends what all its partition
   * writers have ready): each is appended as if it came alone, and each outcome, offsets or
   * error, is answered in the order of the frames once all of them are settled.
   */
  app.post('/internal/append', async (c) => {
    const body = await readBodyBytes(
      c,
      config.appendRequestBytesMax,
      (actual) =>
        new TailbaseError(413, 'request_too_large', 'request exceeds appendRequestBytesMax', {
          limit: 'appendRequestBytesMax',
          max: config.appendRequestBytesMax,
          ...(actual === undefined ? {} : { actual }),
        }),
    );
    const frames = decodeFrames(body, config.partitionsMax);
    const outcomes = frames.map(
      async ({ topic, partition, bytes }): Promise<PartitionAppendOutcome> => {
        try {
          const log = node.appendTarget(topic, String(partition), bytes);
          return { topic, partition, ...(await log.append(bytes)) };
        } catch (error) {
          if (!(error instanceof TailbaseError)) throw error;
          return { topic, partition, status: error.status, ...error.toBody() };
        }
      },
    );
    return c.json({ partitions: await Promise.all(outcomes) });
  });

  /** `max_bytes` (per partition) and `wait_ms` of the read routes. */
  const readLimits = (c: Context) =>
    node.readLimits(
      optionalInteger(c.req.query('max_bytes')),
      optionalInteger(c.req.query('wait_ms')),
    );

  app.get('/internal/topics/:topic/partitions/:partition/records', async (c) => {
    const log = node.partition(c.req.param('topic'), c.req.param('partition'));
    const offset = integerParam(
      c.req.query('offset'),
      'offset',
      0,
      Number.MAX_SAFE_INTEGER,
      undefined,
    );
    const { maxBytes, waitMs } = readLimits(c);
    const result = await node.read(log, offset, maxBytes, waitMs, c.req.raw.signal);
    return c.body(bytesOf(result.batches), 200, {
      'content-type': 'application/octet-stream',
      [LOG_START_OFFSET_HEADER]: String(result.logStartOffset),
      [END_OFFSET_HEADER]: String(result.endOffset),
    });
  });

  /** Several topic-partitions' batches in one answer (shared/fetch-answer.ts), long-polling when idle. */
  app.get('/internal/fetch', async (c) => {
    const positions = parseFetchPositions(c.req.query('from') ?? '', config.partitionsMax);
    const { maxBytes, waitMs } = readLimits(c);
    const outcomes = await fetchPartitions(node, positions, maxBytes, waitMs, c.req.raw.signal);
    return c.body(bytesOf(encodeFetchAnswer(outcomes)), 200, {
      'content-type': 'application/octet-stream',
    });
  });

  app.get('/internal/topics/:topic/partitions/:partition/offsets', (c) => {
    const log = node.partition(c.req.param('topic'), c.req.param('partition'));
    return c.json({
      topic: log.topic.name,
      partition: log.partition,
      logStartOffset: log.logStartOffset,
      endOffset: log.endOffset,
    });
  });

  return app;
}

/** A Buffer as the Uint8Array hono sends, without copying it. */
function bytesOf(buffer: Buffer): Uint8Array<ArrayBuffer> {
  return new Uint8Array(buffer.buffer as ArrayBuffer, buffer.byteOffset, buffer.length);
}
