/**
 * Which broker stores which partition numbers: tailbase log-nodes say so in a broker config
 * (`tailbase.hosted.partitions`) and one node leads a partition number in every topic, so a
 * serve-node's fetches group by node; a Kafka cluster's brokers do not say, and partitions group
 * by their leaders in the topics known.
 */
import { ApiKey } from '../kafka/index.js';
import { isCollectionTopic, SETTINGS_TOPIC } from '../topics.js';
import type { MetadataSnapshot } from './cluster-metadata.js';
import { ClientPart } from './client-parts.js';
import { HOSTED_PARTITIONS_CONFIG, hostedPartitionsOf } from './errors.js';
import { pushTo } from './group-by.js';

/** Kafka's config resource type of a broker. */
export const RESOURCE_BROKER = 4;

export class PartitionHosting extends ClientPart {
  /** The node id storing each partition number; empty on a Kafka cluster. */
  private readonly hostedBy = new Map<number, number>();

  /** True where the brokers said what they store: they are tailbase log-nodes. */
  get known(): boolean {
    return this.hostedBy.size > 0;
  }

  /** Which broker stores which partition numbers, where the brokers say (tailbase log-nodes). */
  async learn(): Promise<void> {
    const snapshot = await this.metadata.current();
    const answers = await Promise.all(
      [...snapshot.brokers].map(async ([nodeId, address]) => {
        // A broker down now is asked no more: its partitions group by their leaders instead.
        const answer = await this.pool
          .connection(address)
          .request(
            ApiKey.DescribeConfigs,
            {
              resources: [
                {
                  resourceType: RESOURCE_BROKER,
                  resourceName: String(nodeId),
                  configurationKeys: [HOSTED_PARTITIONS_CONFIG],
                },
              ],
            },
            { timeoutMs: this.config.answerMsMax },
          )
          .catch(() => null);
        const value = answer?.results[0]?.configs.find((c) => c.name === HOSTED_PARTITIONS_CONFIG);
        return { nodeId, hosted: hostedPartitionsOf(value?.value) };
      }),
    );
    for (const { nodeId, hosted } of answers) {
      for (const partition of hosted) this.hostedBy.set(partition, nodeId);
    }
  }

  /**
   * Partition numbers grouped by the broker that stores them (tailbase's log-nodes say so, and
   * one node leads a partition number in every topic), else by their leader in the topics known;
   * a partition no known topic has yet is a group of its own.
   */
  groups(partitions: readonly number[]): number[][] {
    const snapshot = this.metadata.known();
    const groups = new Map<string, number[]>();
    for (const partition of partitions) {
      const leader =
        this.hostedBy.get(partition) ??
        (snapshot === null ? -1 : referenceLeader(snapshot, partition));
      const key = leader < 0 ? `alone:${partition}` : `node:${leader}`;
      pushTo(groups, key, partition);
    }
    return [...groups.values()];
  }
}

/** The leader of a partition number: in the settings topic for 0, else in a collection topic. */
function referenceLeader(snapshot: MetadataSnapshot, partition: number): number {
  if (partition === 0) {
    const settings = snapshot.topics.get(SETTINGS_TOPIC)?.leaders[0];
    if (settings !== undefined) return settings;
  }
  for (const [name, { leaders }] of snapshot.topics) {
    if (isCollectionTopic(name) && partition < leaders.length) return leaders[partition];
  }
  return -1;
}
