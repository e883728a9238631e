/**
 * Metadata: the brokers (this listener, and the peers of a cluster that splits the partitions)
 * and the topics asked for, or all of them, each partition led by the log-node that stores it; a
 * partition whose log-node has not answered yet has no leader (LEADER_NOT_AVAILABLE, which
 * clients retry). The controller is the node that stores partition 0 (node 0). A lone log-node
 * is node 0, leader of every partition. A missing collection topic is created when both the
 * listener and the client allow it, as Kafka's auto.create.topics.enable does.
 */
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import {
  isCollectionTopic,
  isInternalTopic,
  isKnownTopicName,
  type TopicInfo,
} from '../../shared/topics.js';
import { kafkaErrorCode } from './error-codes.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';

type MetadataRequest = RequestBody<typeof ApiKey.Metadata>;

/** Kafka's "authorized operations not asked for". */
const OPERATIONS_OMITTED = -2147483648;

export function metadataHandler({ log, config, peers }: HandlerDeps): KafkaHandler {
  return async (body: MetadataRequest, context: KafkaRequestContext) => {
    const [cluster, existing, peerBrokers] = await Promise.all([
      log.cluster(),
      log.topics(),
      peers?.brokers() ?? [],
    ]);
    const self = context.broker.nodeId;
    const leaders = new Map<number, number>();
    for (const peer of peerBrokers) {
      for (const partition of peer.hostedPartitions) leaders.set(partition, peer.nodeId);
    }
    for (const partition of cluster.hostedPartitions) leaders.set(partition, self);
    // A lone log-node leads every partition; among peers, the ones it stores.
    const leaderOf = (partition: number) =>
      peers === null ? self : (leaders.get(partition) ?? -1);
    const byName = new Map(existing.map((topic) => [topic.name, topic]));
    const names =
      body.topics === null
        ? existing.map((topic) => topic.name)
        : body.topics.map((topic) => topic.name ?? '');
    const autoCreate = config.autoCreateTopics && body.allowAutoTopicCreation;
    const topics = await Promise.all(
      names.map(async (name) => {
        const found = byName.get(name);
        if (found) return topicEntry(found, leaderOf);
        if (!isKnownTopicName(name)) return failed(name, ErrorCode.INVALID_TOPIC_EXCEPTION);
        if (!autoCreate || !isCollectionTopic(name)) {
          return failed(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
        }
        try {
          return topicEntry(await log.ensureTopic(name), leaderOf);
        } catch (error) {
          return failed(name, kafkaErrorCode(error));
        }
      }),
    );
    return {
      throttleTimeMs: 0,
      brokers: [
        { ...context.broker, rack: null },
        ...peerBrokers.map(({ nodeId, host, port }) => ({ nodeId, host, port, rack: null })),
      ],
      clusterId: cluster.clusterId,
      controllerId: peers === null || cluster.hostedPartitions.includes(0) ? self : 0,
      topics,
      clusterAuthorizedOperations: OPERATIONS_OMITTED,
    };
  };
}

function topicEntry(topic: TopicInfo, leaderOf: (partition: number) => number) {
  return {
    errorCode: ErrorCode.NONE,
    name: topic.name,
    isInternal: isInternalTopic(topic.name),
    partitions: Array.from({ length: topic.partitions }, (_, partitionIndex) => {
      const leaderId = leaderOf(partitionIndex);
      return {
        errorCode: leaderId < 0 ? ErrorCode.LEADER_NOT_AVAILABLE : ErrorCode.NONE,
        partitionIndex,
        leaderId,
        // Unknown, so clients skip leader-epoch validation (OffsetForLeaderEpoch is not served).
        leaderEpoch: -1,
        replicaNodes: leaderId < 0 ? [] : [leaderId],
        isrNodes: leaderId < 0 ? [] : [leaderId],
        offlineReplicas: [],
      };
    }),
    topicAuthorizedOperations: OPERATIONS_OMITTED,
  };
}

function failed(name: string, errorCode: number) {
  return {
    errorCode,
    name,
    isInternal: false,
    partitions: [],
    topicAuthorizedOperations: OPERATIONS_OMITTED,
  };
}
