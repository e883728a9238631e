/**
 * What the tests of an in-process view host share: a logger whose lines the test reads, orders
 * written to the source one record each, and the view's topic as a replica applies it.
 */
import { Writable } from 'node:stream';
import { pino, type Level } from 'pino';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import type { Logger } from '../../shared/logger.js';
import { partitionFor } from '../../shared/partitioner.js';
import { fenceRecords } from '../../shared/view-epoch.js';

/** A logger at `level` and up, each line kept in `lines`. */
export function capturingLogger(level: Level): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    }),
  );
  return { logger, lines };
}

/** Writes `{country}` documents to `orders`, each in its key's partition. */
export async function writeOrders(
  log: LogClient,
  partitions: number,
  orders: readonly [key: string, country: string][],
): Promise<void> {
  for (const [key, country] of orders) {
    await log.append(
      'orders',
      partitionFor(key, partitions),
      encodeBatch([
        {
          key,
          value: new TextEncoder().encode(JSON.stringify({ country })),
          timestampMs: Date.now(),
        },
      ]),
    );
  }
}

/** The view's topic as a replica applies it: each key's last record the epochs keep. */
export async function viewAsApplied(
  log: LogClient,
  view: string,
  partitions: number,
): Promise<Map<string, unknown>> {
  const docs = new Map<string, unknown>();
  for (let partition = 0; partition < partitions; partition++) {
    const read = await log.read(view, partition, 0, { maxBytes: 1 << 20 });
    const records = [...iterateBatches(read.batches)].flatMap((b) => decodeRecords(b.bytes));
    for (const record of fenceRecords(records, -1).kept) {
      if (record.value === null) docs.delete(record.key);
      else docs.set(record.key, JSON.parse(new TextDecoder().decode(record.value)));
    }
  }
  return docs;
}
