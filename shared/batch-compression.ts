/**
 * The compression codecs of a RecordBatch v2 (attributes bits 0-2): what a batch's records section
 * is inflated with before its records can be read, and deflated with when a writer compresses.
 * Kafka compresses the records section only (the 61-byte header stays plain) and the CRC-32C
 * covers the compressed bytes, so a batch is stored and served as its producer compressed it.
 */
import { constants as bufferConstants } from 'node:buffer';
import { promisify } from 'node:util';
import { gunzipSync, gzip, gzipSync } from 'node:zlib';

/** Kafka's codec numbers. */
export const CODECS = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;
type CodecName = keyof typeof CODECS;
/**
 * The codecs this build reads and writes. snappy, lz4 and zstd are refused by name (Kafka's
 * UNSUPPORTED_COMPRESSION_TYPE): Node 20's zlib has none of them, and no package is added yet.
 */
export const CODECS_SUPPORTED = ['none', 'gzip'] as const satisfies readonly CodecName[];
export type SupportedCodecName = (typeof CODECS_SUPPORTED)[number];
/**
 * The most bytes a batch's records may inflate to: a small compressed batch must not become
 * gigabytes in memory. Kafka's own batches inflate to at most a few times their 1 MiB default.
 */
export const BATCH_INFLATED_BYTES_MAX_DEFAULT = 64 * 1024 * 1024;
/**
 * The most bytes a stored batch's records are inflated to when read: the format's bound (a
 * Buffer's), never an append limit, so a batch acknowledged under a raised batchInflatedBytesMax
 * is never called corrupt by recovery, the cleaner or a reader.
 */
export const BATCH_INFLATED_BYTES_FORMAT_MAX = bufferConstants.MAX_LENGTH;

/**
 * zlib level 1, not Kafka's default 6: on the scale corpus in batches of 1000 records it takes
 * 7.9 µs of CPU a document against 42.8 for 12% more bytes (6.40 MiB against 5.72 for 14.7 MiB
 * of NDJSON; bench/log-compression.ts). Inflating costs the same at either level.
 */
const GZIP_LEVEL = 1;

export function codecName(codec: number): string {
  const name = (Object.keys(CODECS) as CodecName[]).find((n) => CODECS[n] === codec);
  return name ?? `unknown (${codec})`;
}

export function isSupportedCodec(codec: number): boolean {
  return CODECS_SUPPORTED.some((name) => CODECS[name] === codec);
}

type Inflated =
  | { ok: true; records: Buffer }
  | {
      ok: false;
      reason: 'unsupported_compression' | 'inflated_too_large' | 'corrupt';
      detail: string;
    };

let inflates = 0;

/** How many records sections this process has inflated: lets a test see a batch inflated once. */
export function inflateCount(): number {
  return inflates;
}

/** The records section of a compressed batch inflated, or why it cannot be. */
export function inflateRecords(
  codec: number,
  compressed: Uint8Array,
  inflatedBytesMax: number,
): Inflated {
  if (codec !== CODECS.gzip) {
    return {
      ok: false,
      reason: 'unsupported_compression',
      detail: `compression codec ${codec} (${codecName(codec)}) is not supported; tailbase reads ${CODECS_SUPPORTED.join(', ')}`,
    };
  }
  inflates++;
  try {
    return { ok: true, records: gunzipSync(compressed, { maxOutputLength: inflatedBytesMax }) };
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      return {
        ok: false,
        reason: 'inflated_too_large',
        detail: `records inflate past batchInflatedBytesMax (${inflatedBytesMax} bytes)`,
      };
    }
    return { ok: false, reason: 'corrupt', detail: `gzip records: ${(error as Error).message}` };
  }
}

/** A records section deflated with a supported codec other than none (the cleaner's rewrites). */
export function deflateRecordsSync(codec: number, records: Uint8Array): Buffer {
  if (codec !== CODECS.gzip) throw new Error(`cannot compress with codec ${codecName(codec)}`);
  return gzipSync(records, { level: GZIP_LEVEL });
}

const gzipAsync = promisify(gzip);

/** deflateRecordsSync on libuv's thread pool, for a writer whose thread serves requests. */
export function deflateRecords(codec: number, records: Uint8Array): Promise<Buffer> {
  if (codec !== CODECS.gzip) throw new Error(`cannot compress with codec ${codecName(codec)}`);
  return gzipAsync(records, { level: GZIP_LEVEL });
}
