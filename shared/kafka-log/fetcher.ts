/**
 * Reads as Fetch requests (no sessions): each position from its partition's leader, the stored
 * batches as raw bytes (the serve-node decodes them itself), a cut-short last batch dropped; a
 * leadership error refreshes the metadata and asks again, at most leaderAttemptsMax times, unless
 * other positions got records: then the moved ones answer their error with those records.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TailbaseError } from '../errors.js';
import type { FetchOutcome } from '../fetch-answer.js';
import { ApiKey, ErrorCode, type ResponseBody } from '../kafka/index.js';
import type { FetchPosition, ReadOptions, ReadResult } from '../log-api.js';
import { ClientPart } from './client-parts.js';
import { wireName, type BrokerAddress } from './config.js';
import { LEADER_ERRORS, logErrorOf } from './errors.js';
import { pushTo } from './group-by.js';

/** A position's outcome from one broker, or word that its leader moved elsewhere. */
type BrokerAnswer = FetchOutcome | { leaderMoved: true; outcome: FetchOutcome };

/** Whether an answer is worth ending a long poll for: records, an error, a moved leader. */
const hasNews = (answer: BrokerAnswer) => !('batches' in answer) || answer.batches.length > 0;

/** Kafka's batch header: baseOffset (8) and batchLength (4) precede the batchLength bytes. */
const BATCH_LENGTH_END = 12;

export class Fetcher extends ClientPart {
  async read(
    topic: string,
    partition: number,
    offset: number,
    options: ReadOptions = {},
  ): Promise<ReadResult> {
    const [outcome] = await this.fetch([{ topic, partition, offset }], options);
    if ('error' in outcome) throw outcome.error;
    return {
      batches: outcome.batches,
      logStartOffset: outcome.logStartOffset,
      endOffset: outcome.endOffset,
    };
  }

  /**
   * Each position from its partition's leader; positions led by several brokers are fetched from
   * each at once (fetchGroups keeps a caller's positions on one broker while leaders stay put).
   */
  async fetch(
    positions: readonly FetchPosition[],
    options: ReadOptions = {},
  ): Promise<FetchOutcome[]> {
    const outcomes: FetchOutcome[] = new Array(positions.length);
    let todo = positions.map((position, index) => ({ ...position, index }));
    for (let attempt = 1; todo.length > 0; attempt++) {
      const groups = new Map<string, { address: BrokerAddress; items: typeof todo }>();
      for (const item of todo) {
        let address: BrokerAddress | null;
        try {
          address = await this.metadata.leader(item.topic, item.partition);
        } catch (error) {
          // A partition without a leader now fails alone; its caller backs it off and asks again.
          if (!(error instanceof TailbaseError) || error.code !== 'partition_not_hosted')
            throw error;
          outcomes[item.index] = { topic: item.topic, partition: item.partition, error };
          continue;
        }
        if (address === null) {
          outcomes[item.index] = {
            topic: item.topic,
            partition: item.partition,
            error: logErrorOf(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${item.topic}`, {
              topic: item.topic,
              partition: item.partition,
            }),
          };
          continue;
        }
        const key = `${address.host}:${address.port}`;
        const group = groups.get(key) ?? { address, items: [] };
        group.items.push(item);
        groups.set(key, group);
      }
      const retry: { item: (typeof todo)[number]; outcome: FetchOutcome }[] = [];
      let news = false;
      const lastAttempt = attempt >= this.config.leaderAttemptsMax;
      // A retry after a leader moved answers at once: the caller's wait was spent.
      const waitMs = attempt === 1 ? (options.waitMs ?? 0) : 0;
      // Kafka answers a long poll once any partition in it has records; across brokers, so does
      // this: the first broker that answers something cuts the others' polls short.
      const answered = new AbortController();
      const polls = groups.size > 1 && waitMs > 0;
      await Promise.all(
        [...groups.values()].map(async ({ address, items }) => {
          const answers = await this.pollFrom(
            address,
            items,
            options,
            waitMs,
            polls ? answered : null,
          );
          if (answers.some(hasNews)) answered.abort();
          items.forEach((item, i) => {
            const answer = answers[i];
            if ('leaderMoved' in answer && !lastAttempt) {
              retry.push({ item, outcome: answer.outcome });
            } else {
              outcomes[item.index] = 'leaderMoved' in answer ? answer.outcome : answer;
              if (!('leaderMoved' in answer) && hasNews(answer)) news = true;
            }
          });
        }),
      );
      // Records for some positions are not held back for the others' new leaders (a back-off
      // and a metadata refresh each try): the moved ones answer their error now, the caller
      // backs them off alone, and the refresh goes on for its next fetch.
      if (retry.length > 0 && news) {
        for (const { item, outcome } of retry) outcomes[item.index] = outcome;
        this.metadata.refresh().catch(() => undefined);
        break;
      }
      if (retry.length > 0) {
        await sleep(this.config.leaderRetryBackoffMs * attempt);
        await this.metadata.refresh();
      }
      todo = retry.map(({ item }) => item);
    }
    return outcomes;
  }

  /**
   * One broker's positions, waiting up to `waitMs` for records unless `answered` aborts first
   * (another broker answered): then asked again without waiting, so every position still gets
   * its offsets and whatever records it has.
   */
  private async pollFrom(
    address: BrokerAddress,
    positions: readonly FetchPosition[],
    options: ReadOptions,
    waitMs: number,
    answered: AbortController | null,
  ): Promise<BrokerAnswer[]> {
    const signals = [options.signal, answered?.signal].filter((s) => s !== undefined);
    const signal = signals.length === 0 ? undefined : AbortSignal.any(signals);
    try {
      return await this.fetchFrom(address, positions, { ...options, waitMs, signal });
    } catch (error) {
      if (answered?.signal.aborted && !options.signal?.aborted) {
        return this.pollFrom(address, positions, options, 0, null);
      }
      this.metadata.staleOnUnreachable(error);
      throw error;
    }
  }

  private async fetchFrom(
    address: BrokerAddress,
    positions: readonly FetchPosition[],
    options: ReadOptions,
  ): Promise<BrokerAnswer[]> {
    const topics = new Map<string, FetchPosition[]>();
    for (const position of positions) pushTo(topics, position.topic, position);
    const partitionMaxBytes = Math.min(
      options.maxBytes ?? this.config.partitionFetchBytesDefault,
      this.config.fetchBytesMax,
    );
    const waitMs = options.waitMs ?? 0;
    const connection = await this.pool.lease(address);
    // An abandoned long poll would hold the connection until it answers: close it instead.
    const abandon = () => connection.close();
    options.signal?.addEventListener('abort', abandon, { once: true });
    let answer: ResponseBody<typeof ApiKey.Fetch>;
    try {
      options.signal?.throwIfAborted();
      answer = await connection.request(
        ApiKey.Fetch,
        {
          replicaId: -1,
          maxWaitMs: waitMs,
          minBytes: 1,
          maxBytes: this.config.fetchBytesMax,
          isolationLevel: 0,
          sessionId: 0,
          sessionEpoch: -1,
          topics: [...topics].map(([topic, items]) => ({
            topic: wireName(this.config, topic),
            partitions: items.map((item) => ({
              partition: item.partition,
              fetchOffset: item.offset,
              partitionMaxBytes,
            })),
          })),
          forgottenTopicsData: [],
          rackId: '',
        },
        { timeoutMs: this.config.answerMsMax + waitMs, signal: options.signal },
      );
    } finally {
      options.signal?.removeEventListener('abort', abandon);
      this.pool.release(connection);
    }
    return positions.map(({ topic, partition }) => {
      const found = answer.responses
        .find((entry) => entry.topic === wireName(this.config, topic))
        ?.partitions.find((entry) => entry.partitionIndex === partition);
      if (found === undefined) {
        return {
          topic,
          partition,
          error: new TailbaseError(502, 'log_error', 'the broker did not answer every partition'),
        };
      }
      const logStartOffset = Number(found.logStartOffset);
      const endOffset = Number(found.highWatermark);
      if (found.errorCode === ErrorCode.NONE) {
        return {
          topic,
          partition,
          logStartOffset: Math.max(logStartOffset, 0),
          endOffset,
          batches: wholeBatches(found.records),
        };
      }
      const outcome = {
        topic,
        partition,
        error: logErrorOf(
          found.errorCode,
          partitionErrorMessage(found.errorCode, topic, partition),
          {
            topic,
            partition,
            ...(logStartOffset >= 0 ? { logStartOffset } : {}),
            ...(endOffset >= 0 ? { endOffset } : {}),
          },
        ),
      };
      return LEADER_ERRORS.has(found.errorCode) ? { leaderMoved: true as const, outcome } : outcome;
    });
  }
}

/**
 * A Fetch answer carries no message per partition, so the client words one: it lands in a
 * serve-node's status, where a failed partition must be told from a moved or missing one.
 */
function partitionErrorMessage(errorCode: number, topic: string, partition: number): string {
  const named = `partition ${partition} of topic ${topic}`;
  return errorCode === ErrorCode.KAFKA_STORAGE_ERROR
    ? `${named} stopped after a storage error on its broker; the broker's log has the cause`
    : named;
}

/** The whole batches of a Fetch answer's records: a broker may cut the last one short. */
function wholeBatches(records: Buffer | null): Buffer {
  if (records === null) return Buffer.alloc(0);
  let end = 0;
  while (records.length - end >= BATCH_LENGTH_END) {
    const next = end + BATCH_LENGTH_END + records.readInt32BE(end + 8);
    if (next > records.length || next <= end) break;
    end = next;
  }
  return end === records.length ? records : records.subarray(0, end);
}
