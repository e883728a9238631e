/** Every topic-partition's earliest and latest offsets (ListOffsets), from their leaders. */
import { setTimeout as sleep } from 'node:timers/promises';
import { TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode } from '../kafka/index.js';
import type { PartitionOffsets, TopicPartition } from '../log-api.js';
import { isKnownTopicName } from '../topics.js';
import { ClientPart } from './client-parts.js';
import { wireName, type BrokerAddress } from './config.js';
import { LEADER_ERRORS, logErrorOf } from './errors.js';
import { groupByTopic, pushTo } from './group-by.js';

const EARLIEST_TIMESTAMP = -2;
const LATEST_TIMESTAMP = -1;

/** The partitions one leader answered, and those it said it no longer leads. */
interface LeaderAnswer {
  answered: PartitionOffsets[];
  moved: TopicPartition[];
}

export class OffsetReader extends ClientPart {
  /**
   * Earliest and latest offsets of every topic-partition tailbase keeps, from their leaders. A
   * partition without a leader (none elected, or its leader said it moved) is asked again after a
   * metadata refresh, up to `leaderAttemptsMax` times, then left out, as one whose log failed
   * (KAFKA_STORAGE_ERROR) is at once: one partition without a leader must not fail every
   * caller's other partitions (a strong read of a key elsewhere, the status page).
   */
  async offsets(): Promise<PartitionOffsets[]> {
    for (let attempt = 1; ; attempt++) {
      const snapshot = await this.metadata.refresh();
      const byLeader = new Map<BrokerAddress, TopicPartition[]>();
      let leaderless = 0;
      for (const [topic, { leaders }] of snapshot.topics) {
        if (!isKnownTopicName(topic)) continue;
        leaders.forEach((leader, partition) => {
          const address = snapshot.brokers.get(leader);
          if (address === undefined) leaderless++;
          else pushTo(byLeader, address, { topic, partition });
        });
      }
      const answers = await Promise.all(
        [...byLeader].map(([address, partitions]) => this.listOffsets(address, partitions)),
      );
      const moved = answers.reduce((sum, answer) => sum + answer.moved.length, 0);
      if ((leaderless === 0 && moved === 0) || attempt >= this.config.leaderAttemptsMax) {
        return answers
          .flatMap((answer) => answer.answered)
          .sort((a, b) =>
            a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1,
          );
      }
      await sleep(this.config.leaderRetryBackoffMs * attempt);
    }
  }

  private async listOffsets(
    address: BrokerAddress,
    partitions: TopicPartition[],
  ): Promise<LeaderAnswer> {
    const connection = this.pool.connection(address);
    const ask = (timestamp: number) =>
      connection.request(
        ApiKey.ListOffsets,
        {
          replicaId: -1,
          isolationLevel: 0,
          topics: [...groupByTopic(partitions)].map(([name, indexes]) => ({
            name: wireName(this.config, name),
            partitions: indexes.map((partitionIndex) => ({ partitionIndex, timestamp })),
          })),
        },
        { timeoutMs: this.config.answerMsMax },
      );
    const [earliest, latest] = await Promise.all([ask(EARLIEST_TIMESTAMP), ask(LATEST_TIMESTAMP)]);
    const answerOf = (answer: typeof earliest, topic: string, partition: number) =>
      answer.topics
        .find((entry) => entry.name === wireName(this.config, topic))
        ?.partitions.find((entry) => entry.partitionIndex === partition);
    const result: LeaderAnswer = { answered: [], moved: [] };
    for (const { topic, partition } of partitions) {
      const [first, last] = [
        answerOf(earliest, topic, partition),
        answerOf(latest, topic, partition),
      ];
      if (first === undefined || last === undefined) {
        throw new TailbaseError(502, 'log_error', 'the broker did not answer every partition');
      }
      const code = first.errorCode || last.errorCode;
      // A partition on a failed log (KAFKA_STORAGE_ERROR) is left out, as the log contract's
      // offsets() leaves out the partitions a log-node stopped.
      if (code === ErrorCode.KAFKA_STORAGE_ERROR) continue;
      if (LEADER_ERRORS.has(code)) {
        result.moved.push({ topic, partition });
      } else if (code !== ErrorCode.NONE) {
        throw logErrorOf(code, null, { topic, partition });
      } else {
        result.answered.push({
          topic,
          partition,
          logStartOffset: Number(first.offset),
          endOffset: Number(last.offset),
        });
      }
    }
    return result;
  }
}
