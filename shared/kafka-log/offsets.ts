/** Every topic-partition's earliest and latest offsets (ListOffsets), from their leaders. */
import { setTimeout as sleep } from 'node:timers/promises';
import { TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode } from '../kafka/index.js';
import type { PartitionOffsets } from '../log-api.js';
import { isKnownTopicName } from '../topics.js';
import type { MetadataSnapshot } from './cluster-metadata.js';
import { ClientPart } from './client-parts.js';
import { wireName } from './config.js';
import { LEADER_ERRORS, LeaderMoved, logErrorOf } from './errors.js';
import { groupByTopic, pushTo } from './group-by.js';

const EARLIEST_TIMESTAMP = -2;
const LATEST_TIMESTAMP = -1;

export class OffsetReader extends ClientPart {
  /** Earliest and latest offsets of every topic-partition tailbase keeps, from their leaders. */
  async offsets(): Promise<PartitionOffsets[]> {
    for (let attempt = 1; ; attempt++) {
      const snapshot = await this.metadata.refresh();
      const byLeader = new Map<number, { topic: string; partition: number }[]>();
      for (const [topic, { leaders }] of snapshot.topics) {
        if (!isKnownTopicName(topic)) continue;
        leaders.forEach((leader, partition) => {
          pushTo(byLeader, leader, { topic, partition });
        });
      }
      try {
        const answers = await Promise.all(
          [...byLeader].map(([leader, partitions]) =>
            this.listOffsets(snapshot, leader, partitions),
          ),
        );
        return answers
          .flat()
          .sort((a, b) =>
            a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1,
          );
      } catch (error) {
        if (!(error instanceof LeaderMoved)) throw error;
        if (attempt >= this.config.leaderAttemptsMax) throw error.error;
        await sleep(this.config.leaderRetryBackoffMs * attempt);
      }
    }
  }

  private async listOffsets(
    snapshot: MetadataSnapshot,
    leader: number,
    partitions: { topic: string; partition: number }[],
  ): Promise<PartitionOffsets[]> {
    const address = snapshot.brokers.get(leader);
    if (address === undefined) {
      const { topic, partition } = partitions[0];
      throw new LeaderMoved(
        logErrorOf(ErrorCode.LEADER_NOT_AVAILABLE, `partition ${partition} of ${topic}`),
      );
    }
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
    const storageFailed = (answer: typeof earliest, topic: string, partition: number) =>
      answerOf(answer, topic, partition)?.errorCode === ErrorCode.KAFKA_STORAGE_ERROR;
    const offsetOf = (answer: typeof earliest, topic: string, partition: number): number => {
      const found = answerOf(answer, topic, partition);
      if (found === undefined) {
        throw new TailbaseError(502, 'log_error', 'the broker did not answer every partition');
      }
      if (found.errorCode === ErrorCode.NONE) return Number(found.offset);
      const error = logErrorOf(found.errorCode, null, { topic, partition });
      throw LEADER_ERRORS.has(found.errorCode) ? new LeaderMoved(error) : error;
    };
    // A partition on a failed log (KAFKA_STORAGE_ERROR) is left out, as the log contract's
    // offsets() leaves out the partitions a log-node stopped: it must not fail the others.
    return partitions
      .filter(({ topic, partition }) => !storageFailed(earliest, topic, partition))
      .map(({ topic, partition }) => ({
        topic,
        partition,
        logStartOffset: offsetOf(earliest, topic, partition),
        endOffset: offsetOf(latest, topic, partition),
      }));
  }
}
