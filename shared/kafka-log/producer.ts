/**
 * Appends as Produce requests (acks=all): each to its partition's leader, a topic the cluster
 * lacks created first. Appends made in the same event-loop turn to partitions led by one broker
 * travel as one request, each still with its own answer; a leadership error refreshes the
 * metadata and sends the append again, at most leaderAttemptsMax times. The gateway's batches
 * travel as built, its producer id, epoch and sequences inside.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { asBuffer, readBatchHeader } from '../batch-codec.js';
import { CallBatcher } from '../call-batcher.js';
import { TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode } from '../kafka/index.js';
import type { AppendResult, ProducerIdentity } from '../log-api.js';
import type { BrokerConnection } from './broker-connection.js';
import { ClientPart, type ClientParts } from './client-parts.js';
import { wireName, type BrokerAddress } from './config.js';
import { DUPLICATE_BATCH_MESSAGE, LEADER_ERRORS, LeaderMoved, logErrorOf } from './errors.js';
import { pushTo } from './group-by.js';
import type { TopicAdmin } from './topic-admin.js';

interface QueuedAppend {
  topic: string;
  partition: number;
  bytes: Buffer;
  signal?: AbortSignal;
}

type AppendOutcome = AppendResult | LeaderMoved | Error;

/** A non-transactional producer's transaction timeout: sent, never used. */
const TRANSACTION_TIMEOUT_MS = 60_000;

export class Producer extends ClientPart {
  private readonly topics: TopicAdmin;
  private readonly producers = new Map<string, CallBatcher<QueuedAppend, AppendOutcome>>();

  constructor(parts: ClientParts, topics: TopicAdmin) {
    super(parts);
    this.topics = topics;
  }

  /** From the controller first (a tailbase log-node cluster hands ids out there), else any. */
  async initProducerId(): Promise<ProducerIdentity> {
    const answer = await this.metadata.admin(async (connection) => {
      const reply = await connection.request(
        ApiKey.InitProducerId,
        {
          transactionalId: null,
          transactionTimeoutMs: TRANSACTION_TIMEOUT_MS,
          producerId: -1,
          producerEpoch: -1,
        },
        { timeoutMs: this.config.answerMsMax },
      );
      if (reply.errorCode !== ErrorCode.NONE) throw logErrorOf(reply.errorCode, null);
      return reply;
    });
    return { producerId: Number(answer.producerId), producerEpoch: answer.producerEpoch };
  }

  async append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult> {
    const bytes = asBuffer(batch);
    for (let attempt = 1; ; attempt++) {
      const leader = await this.topics.leaderOrCreate(topic, partition);
      const outcome = await this.producer(leader).call({ topic, partition, bytes, signal });
      if (!(outcome instanceof Error)) return outcome;
      if (!(outcome instanceof LeaderMoved)) throw outcome;
      if (attempt >= this.config.leaderAttemptsMax) throw outcome.error;
      await sleep(this.config.leaderRetryBackoffMs * attempt);
      await this.metadata.refresh();
    }
  }

  private producer(address: BrokerAddress): CallBatcher<QueuedAppend, AppendOutcome> {
    const key = `${address.host}:${address.port}`;
    let producer = this.producers.get(key);
    if (producer === undefined) {
      producer = new CallBatcher({
        batchMax: Number.MAX_SAFE_INTEGER,
        inFlightMax: this.config.produceRequestsInFlightMax,
        batchWeightMax: this.config.produceRequestBytesMax,
        weigh: (queued) => queued.bytes.length + queued.topic.length,
        send: (queued) => this.produce(address, queued),
      });
      this.producers.set(key, producer);
    }
    return producer;
  }

  /**
   * The appends as Produce requests to one broker, each topic-partition at most once a request
   * (Kafka's rule): a second batch of one partition goes in the next request on the same
   * connection, which the broker handles after the first.
   */
  private async produce(address: BrokerAddress, queued: QueuedAppend[]): Promise<AppendOutcome[]> {
    // The k-th append of a topic-partition goes in round k: one pass, not a search of the rounds.
    const rounds: QueuedAppend[][] = [];
    const seen = new Map<string, number>();
    for (const item of queued) {
      const key = `${item.partition}:${item.topic}`;
      const round = seen.get(key) ?? 0;
      seen.set(key, round + 1);
      (rounds[round] ??= []).push(item);
    }
    const connection = this.pool.connection(address);
    const answered = await Promise.all(
      rounds.map((round) =>
        this.produceRound(connection, round).catch((error: unknown) => {
          this.metadata.staleOnUnreachable(error);
          return round.map(() => (error instanceof Error ? error : new Error(String(error))));
        }),
      ),
    );
    const byItem = new Map<QueuedAppend, AppendOutcome>();
    rounds.forEach((round, r) => round.forEach((item, i) => byItem.set(item, answered[r][i])));
    return queued.map((item) => byItem.get(item)!);
  }

  private async produceRound(
    connection: BrokerConnection,
    round: QueuedAppend[],
  ): Promise<AppendOutcome[]> {
    const topics = new Map<string, QueuedAppend[]>();
    for (const item of round) pushTo(topics, item.topic, item);
    const signals = round.flatMap((item) => (item.signal === undefined ? [] : [item.signal]));
    const answer = await connection.request(
      ApiKey.Produce,
      {
        transactionalId: null,
        acks: -1,
        timeoutMs: this.config.produceTimeoutMs,
        topicData: [...topics].map(([name, items]) => ({
          name: wireName(this.config, name),
          partitionData: items.map((item) => ({ index: item.partition, records: item.bytes })),
        })),
      },
      {
        timeoutMs: this.config.produceTimeoutMs + this.config.answerMsMax,
        signal: signals.length === 0 ? undefined : AbortSignal.any(signals),
      },
    );
    return round.map((item) => {
      const found = answer.responses
        .find((topic) => topic.name === wireName(this.config, item.topic))
        ?.partitionResponses.find((p) => p.index === item.partition);
      if (found === undefined) {
        return new TailbaseError(502, 'log_error', 'the broker did not answer every partition');
      }
      return appendOutcome(item, found);
    });
  }
}

function appendOutcome(
  item: QueuedAppend,
  answer: { errorCode: number; baseOffset: bigint; errorMessage: string | null },
): AppendOutcome {
  const baseOffset = Number(answer.baseOffset);
  const duplicate =
    (answer.errorCode === ErrorCode.NONE && answer.errorMessage === DUPLICATE_BATCH_MESSAGE) ||
    (answer.errorCode === ErrorCode.DUPLICATE_SEQUENCE_NUMBER && baseOffset >= 0);
  if (answer.errorCode === ErrorCode.NONE || duplicate) {
    const header = readBatchHeader(item.bytes);
    const lastOffsetDelta = header === null ? 0 : header.lastOffsetDelta;
    return { baseOffset, lastOffset: baseOffset + lastOffsetDelta, duplicate };
  }
  const error = logErrorOf(answer.errorCode, answer.errorMessage, {
    topic: item.topic,
    partition: item.partition,
  });
  return LEADER_ERRORS.has(answer.errorCode) ? new LeaderMoved(error) : error;
}
