// Proves a change feed's count of a view partition's epochs before its start (gateway/feed-fences.ts)
// fails, retryable (503), when the log answers nothing below the start, instead of answering an epoch
// that may be too low (which would send a fenced writer's record); and that it answers the greatest
// epoch when the log answers. A real log node with a view declared; the empty answer is injected at
// the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeRecords,
  encodeBatch,
  iterateBatches,
  type StoredRecord,
} from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { ViewCatalog } from '../../shared/view-catalog.js';
import { epochHeader } from '../../shared/view-epoch.js';
import { FeedFences } from '../../gateway/feed-fences.js';
import { startLog, type LogFixture } from './gateway-harness.js';

const VIEW = 'per_country';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const READ_BYTES_MAX = 1 << 20;
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

let log: LogFixture;
beforeAll(async () => {
  log = await startLog(1);
  await log.node.client.ensureTopic(VIEW);
  // Records of epochs 3, 7, 5 (a fenced writer's), then the feed's first record, a fenced
  // writer's again. Written before the view is declared: the log-node lets only its processor
  // write a view's topic.
  for (const epoch of [3, 7, 5, 5]) {
    await log.node.client.append(
      VIEW,
      0,
      encodeBatch([
        {
          key: 'DE',
          value: encode({ n: epoch }),
          timestampMs: Date.now(),
          headers: [epochHeader(epoch)],
        },
      ]),
    );
  }
  await log.node.client.ensureTopic(VIEWS_TOPIC);
  await log.node.client.append(
    VIEWS_TOPIC,
    0,
    encodeBatch([{ key: VIEW, value: encode(DEFINITION), timestampMs: Date.now() }]),
  );
});
afterAll(() => log.stop());

/** The log client, its partition reads answering no batches while `empty`. */
function emptyReads(client: LogClient, state: { empty: boolean }): LogClient {
  return new Proxy(client, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (name !== 'read' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const read = await (value as (...a: unknown[]) => Promise<{ batches: Buffer }>).apply(
          target,
          args,
        );
        return state.empty ? { ...read, batches: Buffer.alloc(0) } : read;
      };
    },
  });
}

async function firstRecord(): Promise<StoredRecord> {
  const read = await log.node.client.read(VIEW, 0, 3, { maxBytes: READ_BYTES_MAX });
  for (const batch of iterateBatches(read.batches)) {
    for (const record of decodeRecords(batch.bytes)) if (record.offset === 3) return record;
  }
  throw new Error('no record at offset 3');
}

describe('FeedFences', () => {
  it('fails retryably when the log answers nothing before the feed start, and fences once it does', async () => {
    const state = { empty: true };
    const client = emptyReads(log.node.client, state);
    const fences = new FeedFences(
      client,
      new ViewCatalog(log.node.client, READ_BYTES_MAX),
      READ_BYTES_MAX,
      new AbortController().signal,
    );
    const first = await firstRecord();
    await expect(fences.kept(VIEW, 0, [[first]])).rejects.toMatchObject({
      status: 503,
      code: 'feed_epochs_unread',
    });
    state.empty = false;
    // Epoch 7 was seen before the start: the record of epoch 5 is left out.
    const [kept] = await fences.kept(VIEW, 0, [[first]]);
    expect(kept?.has(first)).toBe(false);
  });
});
