/**
 * The change feed: every record after a token, each partition in offset order, streamed as NDJSON
 * (or SSE for `Accept: text/event-stream`). Each event carries the token of everything sent so far
 * on this stream, so a consumer that resumes with the last token it received misses nothing and
 * sees nothing twice. A stream resumes from its token and, for SSE, from `Last-Event-ID` too (an
 * EventSource reconnects to the same URL with it), whichever is further; with a token, `from` is
 * not used: a partition the token does not name had nothing sent yet and starts at the log start.
 * An SSE stream opens with the id of its starting position, so a reconnect before the first event
 * misses nothing either. One long-polling reader per partition; writes to the stream are awaited,
 * so a slow consumer slows the readers instead of filling memory.
 */
import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import { decodeRecords, iterateBatches } from '../shared/batch-codec.js';
import { checkCollection } from '../shared/collection-name.js';
import { badRequest, TailbaseError } from '../shared/errors.js';
import { mergeTokenOffsets } from '../shared/token.js';
import { requestToken, TOKEN_HEADER } from './consistency.js';
import type { GatewayServices } from './services.js';
import { enumParam, intParam } from './validation.js';

const utf8Strict = new TextDecoder('utf-8', { fatal: true });

export async function changeFeed(
  c: Context,
  query: Map<string, string>,
  services: GatewayServices,
): Promise<Response> {
  const { config, log, tokens, logger } = services;
  const sse = (c.req.header('accept') ?? '').includes('text/event-stream');
  const lastEventId = sse ? c.req.header('last-event-id') : undefined;
  const sentToken = requestToken(c, query, services);
  const token = lastEventId ? mergeTokenOffsets(sentToken, tokens.decode(lastEventId)) : sentToken;
  const fromParam = enumParam(query, 'from', ['start', 'now'] as const) ?? 'start';
  const from = token.size > 0 ? 'start' : fromParam;
  const collectionParam = query.get('collection');
  const collection = collectionParam ? checkCollection(collectionParam) : undefined;
  const limit = intParam(query, 'limit', 1, config.limits.feedLimitMax, Infinity);
  const skipRemoved = enumParam(query, 'removed', ['fail', 'skip'] as const) === 'skip';

  const next = new Map<number, number>();
  const position = new Map(token);
  for (const { partition, logStartOffset, endOffset } of await log.offsets()) {
    const sent = token.get(partition);
    if (sent !== undefined && sent + 1 > endOffset) {
      throw badRequest('invalid_token', `token is ahead of partition ${partition}'s log`, {
        reason: 'ahead_of_log',
        partition,
        endOffset,
      });
    }
    const start = sent !== undefined ? sent + 1 : from === 'now' ? endOffset : logStartOffset;
    // Retention removed records after the token: resuming would skip them without a word.
    const removedAfterToken = sent !== undefined && start < logStartOffset;
    if (removedAfterToken && !skipRemoved) {
      throw new TailbaseError(
        410,
        'records_removed',
        `partition ${partition} no longer holds the records after this token; ` +
          'resume with removed=skip to continue from its log start',
        { partition, logStartOffset },
      );
    }
    next.set(partition, Math.max(start, logStartOffset));
    if (sent === undefined && from === 'now' && endOffset > 0) {
      position.set(partition, endOffset - 1);
    }
    // A gap the consumer accepted (removed=skip) is not asked about again on the next resume.
    if (removedAfterToken) position.set(partition, logStartOffset - 1);
  }

  c.header('content-type', sse ? 'text/event-stream' : 'application/x-ndjson');
  c.header('cache-control', 'no-cache');
  c.header(TOKEN_HEADER, tokens.encode(position));
  return stream(c, async (out) => {
    const stop = new AbortController();
    out.onAbort(() => stop.abort());
    // The client going away aborts the request; the gateway stopping aborts every feed.
    c.req.raw.signal.addEventListener('abort', () => stop.abort(), { once: true });
    services.feeds.add(stop);
    if (sse) await out.write(`id: ${tokens.encode(position)}\n\n`);
    let sent = 0;
    const emit = async (event: Record<string, unknown>, partition: number, offset: number) => {
      if (stop.signal.aborted) return;
      position.set(partition, offset);
      const resume = tokens.encode(position);
      const line = JSON.stringify({ ...event, partition, offset, token: resume });
      if (++sent >= limit) stop.abort();
      await out.write(sse ? `id: ${resume}\nevent: change\ndata: ${line}\n\n` : `${line}\n`);
    };
    const follow = async (partition: number) => {
      let offset = next.get(partition) as number;
      while (!stop.signal.aborted) {
        const read = await log.read(partition, offset, {
          maxBytes: config.feedReadBytesMax,
          waitMs: config.feedPollMs,
          signal: stop.signal,
        });
        for (const batch of iterateBatches(read.batches)) {
          for (const record of decodeRecords(batch.bytes)) {
            if (record.offset < offset || record.collection.startsWith('_')) continue;
            if (collection !== undefined && record.collection !== collection) continue;
            const value =
              record.value === null ? null : JSON.parse(utf8Strict.decode(record.value));
            await emit(
              { collection: record.collection, key: record.key, value },
              partition,
              record.offset,
            );
            if (stop.signal.aborted) return;
          }
          offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
        }
      }
    };
    try {
      await Promise.all([...next.keys()].map(follow));
    } catch (error) {
      if (stop.signal.aborted) return;
      stop.abort();
      logger.error({ err: error }, 'change feed failed');
      const body =
        error instanceof TailbaseError
          ? error.toBody()
          : { error: { code: 'internal', message: 'change feed failed' } };
      await out.write(
        sse ? `event: error\ndata: ${JSON.stringify(body)}\n\n` : `${JSON.stringify(body)}\n`,
      );
    } finally {
      services.feeds.delete(stop);
    }
  });
}
