/**
 * Metadata: one broker (this listener, node 0, leader of every partition and controller) and
 * the topics asked for, or all of them. A missing collection topic is created when both the
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

export function metadataHandler({ log, config }: HandlerDeps): KafkaHandler {
  return async (body: MetadataRequest, context: KafkaRequestContext) => {
    const [cluster, existing] = await Promise.all([log.cluster(), log.topics()]);
    const byName = new Map(existing.map((topic) => [topic.name, topic]));
    const names =
      body.topics === null
        ? existing.map((topic) => topic.name)
        : body.topics.map((topic) => topic.name ?? '');
    const autoCreate = config.autoCreateTopics && body.allowAutoTopicCreation;
    const topics = await Promise.all(
      names.map(async (name) => {
        const found = byName.get(name);
        if (found) return topicEntry(found, context.broker.nodeId);
        if (!isKnownTopicName(name)) return failed(name, ErrorCode.INVALID_TOPIC_EXCEPTION);
        if (!autoCreate || !isCollectionTopic(name)) {
          return failed(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
        }
        try {
          return topicEntry(await log.ensureTopic(name), context.broker.nodeId);
        } catch (error) {
          return failed(name, kafkaErrorCode(error));
        }
      }),
    );
    return {
      throttleTimeMs: 0,
      brokers: [{ ...context.broker, rack: null }],
      clusterId: cluster.clusterId,
      controllerId: context.broker.nodeId,
      topics,
      clusterAuthorizedOperations: OPERATIONS_OMITTED,
    };
  };
}

function topicEntry(topic: TopicInfo, nodeId: number) {
  return {
    errorCode: ErrorCode.NONE,
    name: topic.name,
    isInternal: isInternalTopic(topic.name),
    partitions: Array.from({ length: topic.partitions }, (_, partitionIndex) => ({
      errorCode: ErrorCode.NONE,
      partitionIndex,
      leaderId: nodeId,
      // Unknown, so clients skip leader-epoch validation (OffsetForLeaderEpoch is not served).
      leaderEpoch: -1,
      replicaNodes: [nodeId],
      isrNodes: [nodeId],
      offlineReplicas: [],
    })),
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
