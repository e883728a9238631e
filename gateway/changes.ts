/**
 * The change feed: every record after a token, each partition in offset order, streamed as NDJSON
 * (or SSE for `Accept: text/event-stream`). Each event carries the token of everything sent so far
 * on this stream, so a consumer that resumes with the last token it received misses nothing and
 * sees nothing twice. A stream resumes from its token and, for SSE, from `Last-Event-ID` too (an
 * EventSource reconnects to the same URL with it), whichever is further; with a token, `from` is
 * not used: a partition the token does not name had nothing sent yet and starts at the log start.
 * An SSE stream opens with the id of its starting position, so a reconnect before the first event
 * misses nothing either. The `token=` parameter is the feed's position and wins over a
 * `Tailbase-Token` header (a client may send its session token on every request).
 *
 * Each feed reads its partitions with one multi-partition long-poll per log-node, and at most
 * `feedsMax` feeds are open at once (503 `too_many_feeds` before the stream starts), so feeds
 * cannot take the sockets appends and reads need. Writes to the stream are awaited, so a slow
 * consumer slows the reads instead of filling memory.
 */
import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import { decodeRecords, iterateBatches } from '../shared/batch-codec.js';
import { checkCollection } from '../shared/collection-name.js';
import { badRequest, TailbaseError } from '../shared/errors.js';
import { mergeTokenOffsets, type TokenOffsets } from '../shared/token.js';
import { TOKEN_HEADER } from './consistency.js';
import type { GatewayServices } from './services.js';
import { enumParam, intParam } from './validation.js';

const utf8 = new TextDecoder('utf-8');

/**
 * A record's value as one line of JSON: its text as written, so no number is rounded, with the
 * line breaks JSON allows between tokens turned into spaces (inside strings they are escaped).
 * Bytes that are not JSON (the log takes any) go out as a JSON string of their text, invalid UTF-8
 * as U+FFFD, as the serve-nodes keep them.
 */
function valueLine(bytes: Uint8Array): string {
  const text = utf8.decode(bytes);
  try {
    JSON.parse(text);
  } catch {
    return JSON.stringify(text);
  }
  return text.replace(/[\r\n]/g, ' ');
}

export async function changeFeed(
  c: Context,
  query: Map<string, string>,
  services: GatewayServices,
): Promise<Response> {
  const { config, tokens } = services;
  const sse = (c.req.header('accept') ?? '').includes('text/event-stream');
  const sent = [query.get('token') || c.req.header(TOKEN_HEADER)];
  if (sse) sent.push(c.req.header('last-event-id'));
  const resumes = sent.filter((text): text is string => Boolean(text));
  const token = resumes
    .map((text) => tokens.decode(text))
    .reduce<TokenOffsets>((merged, next) => mergeTokenOffsets(merged, next), new Map());
  const fromParam = enumParam(query, 'from', ['start', 'now'] as const) ?? 'start';
  // A resume starts where its token says, even one naming no partition (opened on empty ones).
  const from = resumes.length > 0 ? 'start' : fromParam;
  const collectionParam = query.get('collection');
  const collection = collectionParam ? checkCollection(collectionParam) : undefined;
  const limit = intParam(query, 'limit', 1, config.limits.feedLimitMax, Infinity);
  const skipRemoved = enumParam(query, 'removed', ['fail', 'skip'] as const) === 'skip';
  if (services.feeds.size >= config.limits.feedsMax) {
    throw new TailbaseError(503, 'too_many_feeds', 'too many change feeds are open; retry later', {
      limit: 'feedsMax',
      max: config.limits.feedsMax,
    });
  }
  const stop = new AbortController();
  services.feeds.add(stop);
  try {
    return await openFeed(c, services, stop, { token, from, collection, limit, skipRemoved, sse });
  } catch (error) {
    services.feeds.delete(stop);
    throw error;
  }
}

interface FeedRequest {
  token: TokenOffsets;
  from: 'start' | 'now';
  collection: string | undefined;
  limit: number;
  skipRemoved: boolean;
  sse: boolean;
}

async function openFeed(
  c: Context,
  services: GatewayServices,
  stop: AbortController,
  { token, from, collection, limit, skipRemoved, sse }: FeedRequest,
): Promise<Response> {
  const { config, log, tokens, logger } = services;

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
    out.onAbort(() => stop.abort());
    // The client going away aborts the request; the gateway stopping aborts every feed.
    c.req.raw.signal.addEventListener('abort', () => stop.abort(), { once: true });
    if (sse) await out.write(`id: ${tokens.encode(position)}\n\n`);
    let sent = 0;
    /** `event` is the line's leading members as JSON text, without braces. */
    const emit = async (event: string, partition: number, offset: number) => {
      if (stop.signal.aborted) return;
      position.set(partition, offset);
      const resume = tokens.encode(position);
      const line = `{${event},"partition":${partition},"offset":${offset},"token":"${resume}"}`;
      if (++sent >= limit) stop.abort();
      await out.write(sse ? `id: ${resume}\nevent: change\ndata: ${line}\n\n` : `${line}\n`);
    };
    /** Sends what one partition's read holds past `offset`; answers the offset to read next. */
    const send = async (partition: number, offset: number, batches: Buffer) => {
      for (const batch of iterateBatches(batches)) {
        for (const record of decodeRecords(batch.bytes)) {
          if (record.offset < offset || record.collection.startsWith('_')) continue;
          if (collection !== undefined && record.collection !== collection) continue;
          const value = record.value === null ? 'null' : valueLine(record.value);
          const names = `"collection":${JSON.stringify(record.collection)},"key":${JSON.stringify(record.key)}`;
          await emit(`${names},"value":${value}`, partition, record.offset);
          if (stop.signal.aborted) return offset;
        }
        offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
      }
      return offset;
    };
    /** One long-poll for the partitions one log-node stores, each sent in offset order. */
    const follow = async (partitions: number[]) => {
      while (!stop.signal.aborted) {
        const positions = partitions.map((partition) => ({
          partition,
          offset: next.get(partition) as number,
        }));
        const outcomes = await log.fetch(positions, {
          maxBytes: config.feedReadBytesMax,
          waitMs: config.feedPollMs,
          signal: stop.signal,
        });
        for (const outcome of outcomes) {
          if ('error' in outcome) throw outcome.error;
          const offset = next.get(outcome.partition) as number;
          next.set(outcome.partition, await send(outcome.partition, offset, outcome.batches));
          if (stop.signal.aborted) return;
        }
      }
    };
    try {
      await Promise.all(log.fetchGroups([...next.keys()]).map(follow));
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
