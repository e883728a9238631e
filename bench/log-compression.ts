/**
 * What --log-compression gzip costs and saves on the scale corpus (bench/scale-corpus.ts), for the
 * batch sizes a gateway cuts (one record a batch for lone PUTs, up to batchRecordsMax 1000 under
 * bulk load): bytes of the log against the raw NDJSON, and CPU a document to deflate (the gateway,
 * on libuv's thread pool) and to decode (every reader: the serve-node's apply, views, feeds) beside
 * decoding the same batches plain. One process, no log: `node dist/bench/log-compression.js [docs]`.
 */
import { compressBatchSync, decodeRecords, encodeBatch } from '../shared/batch-codec.js';
import { CODECS } from '../shared/batch-compression.js';
import { scaleDoc } from './scale-corpus.js';

const DOCS = Number(process.argv[2] ?? 20_000);
const BATCH_RECORDS = [1, 10, 100, 1000];
/** Each CPU figure is the best of this many passes: the machine is shared and noisy. */
const PASSES = 3;

function cpuMicrosPerDoc(run: () => void): number {
  let best = Infinity;
  for (let pass = 0; pass < PASSES; pass++) {
    const before = process.cpuUsage();
    run();
    const used = process.cpuUsage(before);
    best = Math.min(best, (used.user + used.system) / DOCS);
  }
  return best;
}

const docs = Array.from({ length: DOCS }, (_, i) => scaleDoc(i));
const ndjsonBytes = docs.reduce((sum, doc) => sum + Buffer.byteLength(JSON.stringify(doc)) + 1, 0);
const records = docs.map((doc) => ({
  key: doc.key,
  value: Buffer.from(JSON.stringify(doc.value)),
  timestampMs: 1_800_000_000_000,
}));
process.stdout.write(`${DOCS} scale documents, ${(ndjsonBytes / 2 ** 20).toFixed(1)} MiB NDJSON\n`);
process.stdout.write(
  'records a batch | log plain MiB | log gzip MiB | raw/gzip | gzip µs CPU a doc | decode plain µs | decode gzip µs\n',
);
for (const size of BATCH_RECORDS) {
  const plain: Buffer[] = [];
  for (let at = 0; at < records.length; at += size) {
    plain.push(encodeBatch(records.slice(at, at + size)));
  }
  let gzip: Buffer[] = [];
  const deflate = cpuMicrosPerDoc(() => {
    gzip = plain.map((batch) => compressBatchSync(batch, CODECS.gzip));
  });
  const plainBytes = plain.reduce((sum, b) => sum + b.length, 0);
  const gzipBytes = gzip.reduce((sum, b) => sum + b.length, 0);
  const decodePlain = cpuMicrosPerDoc(() => plain.forEach((batch) => decodeRecords(batch)));
  const decodeGzip = cpuMicrosPerDoc(() => gzip.forEach((batch) => decodeRecords(batch)));
  process.stdout.write(
    [
      size,
      (plainBytes / 2 ** 20).toFixed(1),
      (gzipBytes / 2 ** 20).toFixed(1),
      (ndjsonBytes / gzipBytes).toFixed(2),
      deflate.toFixed(1),
      decodePlain.toFixed(2),
      decodeGzip.toFixed(2),
    ].join(' | ') + '\n',
  );
}
