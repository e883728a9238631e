/**
 * `diskBytes`: each topic-partition's bytes on disk, by DescribeLogDirs to every broker that
 * leads a partition, asking it for the partitions it leads. On a replicated cluster only the
 * leader's replica is counted (the followers hold about as much again each). A partition whose
 * leader does not speak DescribeLogDirs (librdkafka's mock cluster), did not answer, answered
 * an error for its log directory or left the partition out is of unknown bytes (null), never 0:
 * a listing of sizes must not fail, nor lie, because one broker cannot say.
 */
import { TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode } from '../kafka/index.js';
import type { PartitionBytes, TopicPartition } from '../log-api.js';
import { isKnownTopicName } from '../topics.js';
import type { BrokerAddress } from './config.js';
import { ClientPart } from './client-parts.js';
import { wireName } from './config.js';
import { groupByTopic, pushTo } from './group-by.js';

/** A leader of no address (-1, or gone from the brokers): its partitions are of unknown bytes. */
const NO_LEADER = -1;

export class LogDirs extends ClientPart {
  async diskBytes(): Promise<PartitionBytes[]> {
    const snapshot = await this.metadata.refresh();
    const byLeader = new Map<number, TopicPartition[]>();
    for (const [topic, { leaders }] of snapshot.topics) {
      if (!isKnownTopicName(topic)) continue;
      leaders.forEach((leader, partition) => {
        const known = snapshot.brokers.has(leader) ? leader : NO_LEADER;
        pushTo(byLeader, known, { topic, partition });
      });
    }
    const answers = await Promise.all(
      [...byLeader].map(([leader, partitions]) => {
        const address = snapshot.brokers.get(leader);
        return address === undefined
          ? partitions.map((p) => ({ ...p, bytes: null }))
          : this.describe(address, partitions);
      }),
    );
    return answers
      .flat()
      .sort((a, b) =>
        a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1,
      );
  }

  /** The bytes of `partitions` on the broker at `address`; null for each it cannot say. */
  private async describe(
    address: BrokerAddress,
    partitions: TopicPartition[],
  ): Promise<PartitionBytes[]> {
    const topicOf = new Map<string, string>();
    const topics = [...groupByTopic(partitions)].map(([topic, indexes]) => {
      const name = wireName(this.config, topic);
      topicOf.set(name, topic);
      return { topic: name, partitions: indexes };
    });
    const sizes = new Map<string, number>();
    try {
      const answer = await this.pool
        .connection(address)
        .request(ApiKey.DescribeLogDirs, { topics }, { timeoutMs: this.config.answerMsMax });
      if (answer.errorCode === ErrorCode.NONE) {
        for (const result of answer.results) {
          if (result.errorCode !== ErrorCode.NONE) continue;
          for (const { name, partitions: stored } of result.topics) {
            const topic = topicOf.get(name);
            if (topic === undefined) continue;
            for (const partition of stored) {
              // A future log is a copy being moved between directories: the current one counts.
              if (partition.isFutureKey) continue;
              sizes.set(`${topic}/${partition.partitionIndex}`, Number(partition.partitionSize));
            }
          }
        }
      }
    } catch (error) {
      // Unreachable, or no DescribeLogDirs (`log_unsupported`): every size stays unknown.
      if (!(error instanceof TailbaseError)) throw error;
    }
    return partitions.map((p) => ({ ...p, bytes: sizes.get(`${p.topic}/${p.partition}`) ?? null }));
  }
}
