/**
 * The change feed: every record after a token, each topic-partition in offset order (a collection
 * is a topic: `collection=` follows one, none follows every collection), streamed as NDJSON
 * (or SSE for `Accept: text/event-stream`). Each event carries the token of everything sent so far
 * on this stream, so a consumer that resumes with the last token it received misses nothing and
 * sees nothing twice. A stream resumes from its token and, for SSE, from `Last-Event-ID` too (an
 * EventSource reconnects to the same URL with it), whichever is further; with a token, `from` is
 * not used: a partition the token does not name had nothing sent yet and starts at the log start.
 * An SSE stream opens with the id of its starting position, so a reconnect before the first event
 * misses nothing either. The `token=` parameter is the feed's position and wins over a
 * `Tailbase-Token` header (a client may send its session token on every request).
 *
 * Collections created while a feed runs join it within feedTopicsRefreshMs, from their log start
 * (every record of theirs came after the feed opened). A token names each collection by its id,
 * so resuming maps the id of every collection the log holds; entries of no such collection (and
 * the settings topic's) ask nothing of the feed.
 *
 * A view's feed (`collection=` a view) follows the topic of the version that serves it, and its
 * events name the view. A redefinition's new version is a recomputation, not a continuation of
 * the old one: when it is swapped in while the feed runs, the feed sends one reset line
 * `{"collection", "reset": true, "version", "token"}` (SSE: `event: reset`) and goes on with the
 * new version from its start; a consumer that keeps the view's documents forgets them at that
 * line. A resumed token of an earlier version (its topic is the view's first one, a version the
 * catalog lists as retired, or a topic the log no longer holds) gets the same: the reset line
 * first, then the serving version from its start.
 *
 * Of a view's topic the feed sends what the serve-nodes apply: its processors' claims and a fenced
 * writer's records are left out, epochs counted from the partition's log start whatever offset the
 * feed starts at (on from the gateway's mark of the last feed's count, feed-epochs.ts); a
 * collection's records all go out (feed-fences.ts). Only a failed count or look is retried as a
 * paused partition: a failure to send ends the stream as any other.
 *
 * Each feed reads its topic-partitions with one multi-partition long-poll per log-node, and at most
 * `feedsMax` feeds are open at once (503 `too_many_feeds` before the stream starts), so feeds
 * cannot take the sockets appends and reads need. Writes to the stream are awaited, so a slow
 * consumer slows the reads instead of filling memory.
 */
import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import {
  decodeRecords,
  iterateBatches,
  type BatchHeader,
  type StoredRecord,
} from '../shared/batch-codec.js';
import { checkCollection } from '../shared/collection-name.js';
import type { FilterNode } from '../shared/filter/ast.js';
import { matches } from '../shared/filter/evaluate.js';
import { parseFieldParams } from '../shared/filter-params.js';
import { badRequest, isUnknownTopic, TailbaseError } from '../shared/errors.js';
import type { FetchOutcome } from '../shared/fetch-answer.js';
import type { FetchPosition, PartitionOffsets } from '../shared/log-api.js';
import { collectionId, mergeTokenOffsets, offsetsOf, type TokenOffsets } from '../shared/token.js';
import { isCollectionTopic, type TopicInfo } from '../shared/topics.js';
import type { CatalogView } from '../shared/view-catalog.js';
import { TOKEN_HEADER } from './consistency.js';
import type { GatewayServices } from './services.js';
import { enumParam, intParam } from './validation.js';
import { FeedFences } from './feed-fences.js';

const utf8 = new TextDecoder('utf-8');
/** A feed's first wait after a partition's outage; each next one doubles, to feedRetryMsMax. */
const FEED_RETRY_MS_MIN = 100;

/**
 * A record's value as one line of JSON: its text as written, so no number is rounded, with the
 * line breaks JSON allows between tokens turned into spaces (inside strings they are escaped).
 * Bytes that are not JSON (the log takes any) go out as a JSON string of their text, invalid UTF-8
 * as U+FFFD, as the serve-nodes keep them. `doc` is the parsed value when it is JSON (undefined
 * otherwise), for the feed's filter: the value is parsed once for both.
 */
function recordValue(bytes: Uint8Array | null): { line: string; doc: unknown } {
  if (bytes === null) return { line: 'null', doc: null };
  const text = utf8.decode(bytes);
  try {
    return { line: text.replace(/[\r\n]/g, ' '), doc: JSON.parse(text) as unknown };
  } catch {
    return { line: JSON.stringify(text), doc: undefined };
  }
}

/** One batch of a read answer, its records decoded. */
interface ReadBatch {
  header: BatchHeader;
  records: StoredRecord[];
}

function readBatches(batches: Buffer): ReadBatch[] {
  return [...iterateBatches(batches)].map((batch) => ({
    header: batch.header,
    records: decodeRecords(batch.bytes),
  }));
}

/** Whether a record passes the feed's filter: a delete always does, a value that is not JSON never. */
function passes(filter: FilterNode, deleted: boolean, doc: unknown): boolean {
  return deleted || (doc !== undefined && matches(filter, doc));
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
  const { filter } = parseFieldParams({ filter: query.get('filter') }, config.limits);
  if (services.feeds.size >= config.limits.feedsMax) {
    throw new TailbaseError(503, 'too_many_feeds', 'too many change feeds are open; retry later', {
      limit: 'feedsMax',
      max: config.limits.feedsMax,
    });
  }
  const view =
    collection === undefined ? undefined : (await services.views.current()).get(collection);
  const stop = new AbortController();
  services.feeds.add(stop);
  try {
    const followed = view?.topic ?? collection;
    const version = view?.version ?? null;
    const request = {
      token,
      from,
      collection,
      view,
      followed,
      version,
      limit,
      skipRemoved,
      sse,
      filter,
    };
    return await openFeed(c, services, stop, request);
  } catch (error) {
    services.feeds.delete(stop);
    throw error;
  }
}

interface FeedRequest {
  token: TokenOffsets;
  from: 'start' | 'now';
  /** The name events carry: the collection's, or the view's. */
  collection: string | undefined;
  /**
   * The view as the feed opened on it, looked up once: a second look could find a swap's new
   * version and follow the retired one with a reset.
   */
  view: CatalogView | undefined;
  /** The topic followed: the collection's, or the serving version's of a view (it moves at a swap). */
  followed: string | undefined;
  /** A view's serving version (its definition's offset in the views topic); null for a collection. */
  version: number | null;
  limit: number;
  skipRemoved: boolean;
  sse: boolean;
  /** Only document writes whose value matches it (and every delete: it carries no value). */
  filter: FilterNode | null;
}

/**
 * Where a feed stands: per followed topic-partition the next offset to read, and the token of
 * everything sent (each event's resume point). Collection topics join as the log shows them.
 */
class FeedPositions {
  /** topic → partition → the next offset to read. */
  readonly next = new Map<string, Map<number, number>>();
  /** collection id → partition → the last offset sent (or skipped past). */
  readonly position: Map<number, Map<number, number>>;

  constructor(
    private readonly request: FeedRequest,
    /** A collection's incarnation, which names it in tokens. */
    private readonly incarnationOf: (topic: string) => number,
  ) {
    this.position = mergeTokenOffsets(request.token);
  }

  /**
   * Follows the collection topics among `offsets` not followed yet; answers whether any joined.
   * A partition the token names resumes after it (400 when the token is ahead of its log, 410
   * when retention removed records after it, unless `removed=skip`); one it does not name starts
   * at the log start, or at the end for a `from=now` feed's first topics.
   */
  join(offsets: readonly PartitionOffsets[], from = this.request.from): boolean {
    let joined = false;
    for (const { topic, partition, logStartOffset, endOffset } of offsets) {
      if (!isCollectionTopic(topic) || this.next.get(topic)?.has(partition)) continue;
      if (this.request.followed !== undefined && topic !== this.request.followed) continue;
      const sent = offsetsOf(this.request.token, topic, this.incarnationOf(topic)).get(partition);
      if (sent !== undefined && sent + 1 > endOffset) {
        throw badRequest(
          'invalid_token',
          `token is ahead of ${topic} partition ${partition}'s log`,
          {
            reason: 'ahead_of_log',
            collection: topic,
            partition,
            endOffset,
          },
        );
      }
      const start = sent !== undefined ? sent + 1 : from === 'now' ? endOffset : logStartOffset;
      // Retention removed records after the token: resuming would skip them without a word.
      const removedAfterToken = sent !== undefined && start < logStartOffset;
      if (removedAfterToken && !this.request.skipRemoved) {
        throw new TailbaseError(
          410,
          'records_removed',
          `${topic} partition ${partition} no longer holds the records after this token; ` +
            'resume with removed=skip to continue from its log start',
          { collection: topic, partition, logStartOffset },
        );
      }
      let partitions = this.next.get(topic);
      if (partitions === undefined) this.next.set(topic, (partitions = new Map()));
      partitions.set(partition, Math.max(start, logStartOffset));
      if (sent === undefined && from === 'now' && endOffset > 0) {
        this.sent(topic, partition, endOffset - 1);
      }
      // A gap the consumer accepted (removed=skip) is not asked about again on the next resume.
      if (removedAfterToken) this.sent(topic, partition, logStartOffset - 1);
      joined = true;
    }
    return joined;
  }

  /** The positions to read of the followed topics' partitions among `partitions`. */
  positions(partitions: ReadonlySet<number>): FetchPosition[] {
    const positions: FetchPosition[] = [];
    for (const [topic, offsets] of this.next) {
      for (const [partition, offset] of offsets) {
        if (partitions.has(partition)) positions.push({ topic, partition, offset });
      }
    }
    return positions;
  }

  /** Stops following a topic (a view's version swapped out): its positions leave the token too. */
  forget(topic: string): void {
    this.next.delete(topic);
    this.position.delete(collectionId(topic, this.incarnationOf(topic)));
  }

  sent(topic: string, partition: number, offset: number): void {
    const id = collectionId(topic, this.incarnationOf(topic));
    let partitions = this.position.get(id);
    if (partitions === undefined) this.position.set(id, (partitions = new Map()));
    partitions.set(partition, offset);
  }
}

async function openFeed(
  c: Context,
  services: GatewayServices,
  stop: AbortController,
  request: FeedRequest,
): Promise<Response> {
  const { config, cluster, log, tokens, logger } = services;
  const { collection, limit, sse, view } = request;
  const { incarnations } = services;
  const topics = await log.topics();
  incarnations.update(topics);
  const feed = new FeedPositions(request, (topic) => incarnations.cached(topic));
  const stale = view === undefined ? [] : staleVersionIds(view, topics, feed.position);
  for (const id of stale) feed.position.delete(id);
  feed.join(await log.offsets());

  c.header('content-type', sse ? 'text/event-stream' : 'application/x-ndjson');
  c.header('cache-control', 'no-cache');
  c.header(TOKEN_HEADER, tokens.encode(feed.position));
  return stream(c, async (out) => {
    out.onAbort(() => stop.abort());
    // The client going away aborts the request; the gateway stopping aborts every feed.
    c.req.raw.signal.addEventListener('abort', () => stop.abort(), { once: true });
    if (sse) await out.write(`id: ${tokens.encode(feed.position)}\n\n`);
    let sent = 0;
    /** Aborted when topics join, so every long-poll starts over with their positions too. */
    let round = new AbortController();
    /** Lines go out one at a time: a swap's reset line never lands amid another's events. */
    let writing: Promise<void> = Promise.resolve();
    const exclusive = (write: () => Promise<void>) => {
      const next = writing.then(write);
      writing = next.catch(() => undefined);
      return next;
    };
    const name = (topic: string) => JSON.stringify(request.collection ?? topic);
    /** `event` is the line's leading members as JSON text, without braces. */
    const emit = (event: string, topic: string, partition: number, offset: number) =>
      exclusive(async () => {
        // A view's version swapped out meanwhile: nothing more of it is sent.
        if (stop.signal.aborted || !feed.next.has(topic)) return;
        feed.sent(topic, partition, offset);
        const resume = tokens.encode(feed.position);
        const line = `{${event},"partition":${partition},"offset":${offset},"token":"${resume}"}`;
        if (++sent >= limit) stop.abort();
        await out.write(sse ? `id: ${resume}\nevent: change\ndata: ${line}\n\n` : `${line}\n`);
      });
    /** The line that tells a view's consumer to forget what it holds: a new version follows. */
    const reset = async (topic: string) => {
      const resume = tokens.encode(feed.position);
      const line = `{"collection":${name(topic)},"reset":true,"version":${request.version},"token":"${resume}"}`;
      await out.write(sse ? `id: ${resume}\nevent: reset\ndata: ${line}\n\n` : `${line}\n`);
    };
    if (stale.length > 0) await exclusive(() => reset(request.followed!));
    /** A view's swap: the feed follows the new version's topic from its start, after a reset. */
    const followSwap = async (): Promise<boolean> => {
      const now = (await services.views.current()).get(request.collection!);
      if (now === undefined || now.topic === request.followed) return false;
      await exclusive(async () => {
        feed.forget(request.followed!);
        request.followed = now.topic;
        request.version = now.version;
        await reset(now.topic);
      });
      feed.join(await log.offsets(), 'start');
      round.abort();
      round = new AbortController();
      return true;
    };
    /** What the feed leaves out of views' topics, as the serve-nodes do (feed-fences.ts). */
    const fences = new FeedFences({
      log,
      views: services.views,
      epochs: services.feedEpochs,
      incarnations,
      readBytesMax: config.feedReadBytesMax,
      readsMax: config.limits.feedEpochReadsMax,
      signal: stop.signal,
      counted: (records) => services.metrics.feedEpochRecords.inc(records),
      reading: (delta) => (services.feedEpochReads.inFlight += delta),
    });
    /**
     * Sends what one topic-partition's read holds past `offset`, but the records `keptOf` (each
     * batch's, FeedFences.kept) leaves out; answers the offset to read next.
     */
    const send = async (
      topic: string,
      partition: number,
      offset: number,
      read: readonly ReadBatch[],
      keptOf: readonly (ReadonlySet<StoredRecord> | null)[],
    ) => {
      for (const [i, batch] of read.entries()) {
        const kept = keptOf[i];
        for (const record of batch.records) {
          if (record.offset < offset) continue;
          if (kept !== null && !kept.has(record)) {
            // A view's claim, or a fenced writer's record: no document changed.
            feed.sent(topic, partition, record.offset);
            continue;
          }
          const value = recordValue(record.value);
          if (
            request.filter !== null &&
            !passes(request.filter, record.value === null, value.doc)
          ) {
            // Passed over, not sent: a resume from a later event's token does not read it again.
            feed.sent(topic, partition, record.offset);
            continue;
          }
          const names = `"collection":${name(topic)},"key":${JSON.stringify(record.key)}`;
          await emit(`${names},"value":${value.line}`, topic, partition, record.offset);
          if (stop.signal.aborted) return offset;
        }
        offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
      }
      return offset;
    };
    /**
     * A view's old version's topic deleted after its swap, before the feed looked at the catalog
     * again: the feed follows the new version now. False for any other failure.
     */
    const swappedAway = async (error: unknown, topic: unknown): Promise<boolean> => {
      if (view === undefined) return false;
      if (!isUnknownTopic(error)) return false;
      // Another log-node's read noticed first: the topic is followed no more.
      return (await followSwap()) || (typeof topic === 'string' && !feed.next.has(topic));
    };
    /** One long-poll at a time for what one log-node stores, each topic-partition in order. */
    const follow = async (group: ReadonlySet<number>) => {
      const paused = new FeedPauses(config.feedRetryMsMax);
      while (!stop.signal.aborted) {
        const signal = AbortSignal.any([stop.signal, round.signal]);
        const all = feed.positions(group);
        const positions = all.filter((p) => !paused.has(p.topic, p.partition));
        if (positions.length === 0) {
          await (all.length === 0 ? aborted(signal) : sleep(paused.msUntilNext(), signal));
          continue;
        }
        let outcomes: FetchOutcome[];
        try {
          outcomes = await log.fetch(positions, {
            maxBytes: config.feedReadBytesMax,
            waitMs: config.feedPollMs,
            signal,
          });
        } catch (error) {
          if (signal.aborted && !stop.signal.aborted) continue;
          const topic = error instanceof TailbaseError ? error.details.topic : undefined;
          if (await swappedAway(error, topic)) continue;
          if (!passing(error)) throw error;
          logger.warn({ err: error, collection }, 'change feed read failed; retrying');
          for (const { topic, partition } of positions) paused.pause(topic, partition);
          continue;
        }
        // The partitions' fences are read at once, so their first counts share one read of the
        // topics (incarnations.fresh); each is taken in the answer's order, as it is sent.
        const reads = outcomes.map((outcome) =>
          'error' in outcome ? [] : readBatches(outcome.batches),
        );
        const fenced = outcomes.map((outcome, i) =>
          'error' in outcome || !feed.next.has(outcome.topic)
            ? null
            : fences
                .ready(
                  outcome.topic,
                  outcome.partition,
                  reads[i].map((batch) => batch.records),
                )
                .then(
                  (take) => ({ take }),
                  (error: unknown) => ({ error }),
                ),
        );
        for (const [i, outcome] of outcomes.entries()) {
          if ('error' in outcome) {
            if (await swappedAway(outcome.error, outcome.topic)) break;
            if (!passing(outcome.error)) throw outcome.error;
            const { topic, partition, error } = outcome;
            logger.warn(
              { err: error, topic, partition },
              'change feed partition unreadable; retrying',
            );
            paused.pause(topic, partition);
            continue;
          }
          const { topic, partition } = outcome;
          paused.resume(topic, partition);
          const offsets = feed.next.get(topic);
          const ready = await fenced[i];
          if (offsets === undefined || ready === null) continue;
          const offset = offsets.get(partition) as number;
          const read = reads[i];
          let keptOf: (ReadonlySet<StoredRecord> | null)[];
          try {
            if ('error' in ready) throw ready.error;
            keptOf = ready.take();
          } catch (error) {
            // A read of what came before the feed's start, or of the views topic, failed.
            if (stop.signal.aborted) return;
            if (await swappedAway(error, topic)) break;
            if (!passing(error)) throw error;
            logger.warn(
              { err: error, topic, partition },
              'change feed fence read failed; retrying',
            );
            paused.pause(topic, partition);
            continue;
          }
          offsets.set(partition, await send(topic, partition, offset, read, keptOf));
          if (stop.signal.aborted) return;
        }
      }
    };
    /** Re-reads the log's topics; collections created since join the feed from their start. */
    const watchTopics = async () => {
      while (!stop.signal.aborted) {
        await sleep(config.feedTopicsRefreshMs, stop.signal);
        if (stop.signal.aborted) return;
        if (view !== undefined) await followSwap();
        const known = new Set(feed.next.keys());
        const topics = await log.topics();
        incarnations.update(topics);
        if (!topics.some(({ name }) => isCollectionTopic(name) && !known.has(name))) continue;
        if (feed.join(await log.offsets(), 'start')) {
          round.abort();
          round = new AbortController();
        }
      }
    };
    const groups = log
      .fetchGroups(Array.from({ length: cluster.partitions }, (_, p) => p))
      .map((group) => new Set(group));
    try {
      await Promise.all([...groups.map(follow), watchTopics()]);
    } catch (error) {
      if (stop.signal.aborted) return;
      stop.abort();
      logger.error({ err: error, collection }, 'change feed failed');
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

/**
 * The ids a resumed token names of an earlier version of the view when it names nothing of the
 * serving one: the view's first topic (its name) once another serves, the versions the catalog
 * lists as retired, and topics the log no longer holds (a version deleted since).
 */
function staleVersionIds(
  view: CatalogView,
  topics: readonly TopicInfo[],
  position: ReadonlyMap<number, unknown>,
): number[] {
  const serving = collectionId(view.topic, incarnationIn(topics, view.topic));
  if (position.has(serving)) return [];
  const live = new Set(topics.map((topic) => collectionId(topic.name, topic.incarnation ?? 0)));
  const earlier = new Set(
    [view.view.name, ...view.retired]
      .filter((topic) => topic !== view.topic)
      .map((topic) => collectionId(topic, incarnationIn(topics, topic))),
  );
  return [...position.keys()].filter((id) => earlier.has(id) || !live.has(id));
}

function incarnationIn(topics: readonly TopicInfo[], name: string): number {
  return topics.find((topic) => topic.name === name)?.incarnation ?? 0;
}

/**
 * An outage the log may recover from (no leader now, a failed or unreachable broker, a timeout):
 * the feed waits it out for that partition and goes on with the others, as a Kafka consumer does.
 * Anything else (records removed, a bad position) ends the stream with the error.
 */
function passing(error: unknown): boolean {
  return error instanceof TailbaseError && error.status === 503;
}

/** Topic-partitions a feed leaves alone for a while after an outage, backing off each. */
class FeedPauses {
  private readonly until = new Map<string, { atMs: number; backoffMs: number }>();

  constructor(private readonly backoffMsMax: number) {}

  has(topic: string, partition: number): boolean {
    const entry = this.until.get(`${topic}/${partition}`);
    return entry !== undefined && entry.atMs > Date.now();
  }

  pause(topic: string, partition: number): void {
    const key = `${topic}/${partition}`;
    const backoffMs = Math.min(
      (this.until.get(key)?.backoffMs ?? FEED_RETRY_MS_MIN / 2) * 2,
      this.backoffMsMax,
    );
    this.until.set(key, { atMs: Date.now() + backoffMs, backoffMs });
  }

  resume(topic: string, partition: number): void {
    this.until.delete(`${topic}/${partition}`);
  }

  msUntilNext(): number {
    const now = Date.now();
    const next = Math.min(...[...this.until.values()].map((entry) => entry.atMs));
    return Math.max(next - now, 1);
  }
}

/** Resolves once `signal` is aborted. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}

/** Resolves after `ms`, or at once when `signal` is aborted. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
