/**
 * `tailbase bulk <collection> [file|-]`: NDJSON lines of `{key, value}` from a file or stdin, sent
 * in chunks to POST /v1/collections/:c/docs. Chunks go one at a time, in order: two chunks in
 * flight could reorder two writes of the same key. A rejected chunk stops the load; the error
 * names its line in the source, and the chunks before it stay written.
 */
import fs from 'node:fs';
import { type Command, Option } from 'commander';
import { TailbaseError } from '../../shared/errors.js';
import {
  addWriteOptions,
  clientAction,
  clientCommand,
  collectionName,
  integerAtLeast,
  writeOptionsOf,
} from '../command-kit.js';
import { formatDuration, formatRate } from '../format.js';
import { type ClientIo, UsageError } from '../io.js';
import { type Chunk, chunkLines, splitLines } from '../ndjson.js';
import { startProgress } from '../progress.js';

export const CHUNK_LINES_DEFAULT = 1000;
/** Half the gateway's default bulkBytesMax (16 MiB). */
export const CHUNK_BYTES_DEFAULT = 8 * 1024 * 1024;
/** The gateway's documentBytesMax is 1 MiB; a line far beyond it is not a record. */
const LINE_CHARS_MAX = 32 * 1024 * 1024;

export interface BulkTotals {
  count: number;
  requests: number;
  elapsedMs: number;
  token: string | undefined;
}

/** The gateway names a rejected record by its line or index in the chunk: map it to the source. */
export function locateRejection(
  error: TailbaseError,
  chunk: Chunk,
  written: number,
): TailbaseError {
  const { line, index } = error.details as { line?: unknown; index?: unknown };
  const at = typeof line === 'number' ? line - 1 : typeof index === 'number' ? index : undefined;
  const sourceLine = at === undefined ? undefined : chunk.lineNumbers[at];
  // The gateway's message may open with its own count of lines within the chunk ("line 3 is not
  // valid JSON"): that opening is rewritten to the source line rather than contradicted by it.
  const chunkLine = typeof line === 'number' ? `line ${line}` : undefined;
  const opensWithChunkLine =
    chunkLine !== undefined &&
    error.message.startsWith(chunkLine) &&
    !/^\d/.test(error.message.slice(chunkLine.length));
  let message: string;
  if (sourceLine === undefined) {
    message = `the chunk of lines ${chunk.lineNumbers[0]}-${chunk.lineNumbers.at(-1)}: ${error.message}`;
  } else if (opensWithChunkLine) {
    message = `line ${sourceLine}${error.message.slice((chunkLine as string).length)}`;
  } else {
    message = `line ${sourceLine}: ${error.message}`;
  }
  return new TailbaseError(
    error.status,
    error.code,
    `${message} (${written} records before it were written)`,
    { ...error.details, ...(sourceLine === undefined ? {} : { line: sourceLine }), written },
  );
}

export function registerBulkCommand(program: Command, io: ClientIo): void {
  addWriteOptions(clientCommand(program, io, 'bulk'))
    .description('load NDJSON lines of {"key": ..., "value": ...} (value null deletes)')
    .argument('<collection>', 'collection name', collectionName)
    .argument('[file]', 'NDJSON file, or - (the default) for stdin')
    .addOption(
      new Option('--chunk-lines <n>', 'records per request')
        .env('TAILBASE_BULK_CHUNK_LINES')
        .default(CHUNK_LINES_DEFAULT)
        .argParser(integerAtLeast(1)),
    )
    .addOption(
      new Option('--chunk-bytes <bytes>', 'largest request body')
        .env('TAILBASE_BULK_CHUNK_BYTES')
        .default(CHUNK_BYTES_DEFAULT)
        .argParser(integerAtLeast(1)),
    )
    .action(
      clientAction(io, async (session, [collection, file], flags) => {
        const fromStdin = file === undefined || file === '-';
        if (!fromStdin && !fs.statSync(file, { throwIfNoEntry: false })?.isFile()) {
          throw new UsageError(`${file} is not a file`);
        }
        const totalBytes = fromStdin ? 0 : fs.statSync(file).size;
        const source = fromStdin ? io.stdin : fs.createReadStream(file);
        const progress = startProgress(
          io,
          fromStdin
            ? 'bulk | {records} records | {rate} records/s | {duration_formatted}'
            : 'bulk [{bar}] {percentage}% | {records} records | {rate} records/s | ETA {eta_formatted}',
          totalBytes,
          { records: 0, rate: '-' },
        );
        const startedMs = performance.now();
        const totals: BulkTotals = { count: 0, requests: 0, elapsedMs: 0, token: undefined };
        let consumedBytes = 0;
        try {
          const chunks = chunkLines(splitLines(source, LINE_CHARS_MAX), {
            linesMax: flags.chunkLines as number,
            bytesMax: flags.chunkBytes as number,
          });
          const target = session.client.collection(collection);
          const writeOptions = writeOptionsOf(flags);
          for await (const chunk of chunks) {
            consumedBytes += chunk.sourceBytes;
            if (chunk.lineNumbers.length > 0) {
              try {
                const result = await target.bulkNdjson(chunk.body, writeOptions);
                totals.count += result.count;
                totals.requests += 1;
                totals.token = result.token;
              } catch (error) {
                if (!(error instanceof TailbaseError)) throw error;
                throw locateRejection(error, chunk, totals.count);
              }
            }
            const rate = formatRate(totals.count, performance.now() - startedMs);
            progress.update(fromStdin ? totals.count : Math.min(consumedBytes, totalBytes), {
              records: totals.count,
              rate,
            });
          }
        } finally {
          progress.stop();
        }
        totals.elapsedMs = Math.round(performance.now() - startedMs);
        if (session.json) {
          session.print(JSON.stringify(totals));
          return;
        }
        session.print(
          `bulk: ${totals.count} records in ${totals.requests} requests, ` +
            `${formatDuration(totals.elapsedMs)} (${formatRate(totals.count, totals.elapsedMs)} records/s)`,
        );
      }),
    );
}
