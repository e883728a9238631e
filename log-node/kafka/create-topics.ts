/**
 * CreateTopics: collections, with the cluster's partition count, and prefixed internal topics (a
 * tailbase with a topic prefix: shared/topics.ts), with one partition; one replica (the
 * log-node's), and the five topic configs tailbase has. validateOnly checks and creates nothing.
 */
import { ApiKey, ErrorCode, ZERO_UUID, type RequestBody } from '../../shared/kafka/index.js';
import {
  INTERNAL_TOPIC_PARTITIONS,
  isCollectionTopic,
  isInternalTopic,
  TOPIC_CONFIG_NAMES,
  type TopicConfigs,
} from '../../shared/topics.js';
import { kafkaErrorCode, kafkaErrorMessage } from './error-codes.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';
import { configSource, configValue, parseTopicConfigs } from '../../shared/kafka/topic-configs.js';

type CreateTopicsRequest = RequestBody<typeof ApiKey.CreateTopics>;
type CreatableTopic = CreateTopicsRequest['topics'][number];

export function createTopicsHandler({ log, topicConfigDefaults }: HandlerDeps): KafkaHandler {
  return async (body: CreateTopicsRequest, context: KafkaRequestContext) => {
    const [cluster, existing] = await Promise.all([log.cluster(), log.topics()]);
    const existingNames = new Set(existing.map((topic) => topic.name));
    const counts = new Map<string, number>();
    for (const { name } of body.topics) counts.set(name, (counts.get(name) ?? 0) + 1);
    const topics = [];
    for (const topic of body.topics) {
      topics.push(await create(topic));
    }
    return { throttleTimeMs: 0, topics };

    async function create(topic: CreatableTopic) {
      const { name } = topic;
      const failed = (errorCode: number, errorMessage: string | null) => ({
        name,
        topicId: ZERO_UUID,
        errorCode,
        errorMessage,
        numPartitions: -1,
        replicationFactor: -1,
        configs: null,
      });
      if (!context.may('admin')) {
        return failed(
          ErrorCode.TOPIC_AUTHORIZATION_FAILED,
          'creating topics needs the admin scope',
        );
      }
      if ((counts.get(name) ?? 0) > 1) {
        return failed(ErrorCode.INVALID_REQUEST, `topic ${name} is named twice in the request`);
      }
      if (existingNames.has(name)) {
        return failed(ErrorCode.TOPIC_ALREADY_EXISTS, `topic ${name} already exists`);
      }
      // A view processor writes topics its gateway created; one that has not yet seen its view
      // dropped would create the view's topic again, as a collection.
      if (context.viewWriter) {
        return failed(ErrorCode.POLICY_VIOLATION, 'a view processor creates no topic');
      }
      const internal = isInternalTopic(name);
      if (!isCollectionTopic(name) && !internal) {
        return failed(
          ErrorCode.INVALID_TOPIC_EXCEPTION,
          'a topic is a collection name (^[a-z][a-z0-9_-]{0,63}$), or an internal topic after a prefix',
        );
      }
      const partitions = internal ? INTERNAL_TOPIC_PARTITIONS : cluster.partitions;
      if (topic.numPartitions !== -1 && topic.numPartitions !== partitions) {
        return failed(
          ErrorCode.INVALID_PARTITIONS,
          internal
            ? `an internal topic has ${partitions} partition (numPartitions -1 or ${partitions})`
            : `every collection has the cluster's ${partitions} partitions (numPartitions -1 or ${partitions})`,
        );
      }
      if (topic.replicationFactor !== -1 && topic.replicationFactor !== 1) {
        return failed(ErrorCode.INVALID_REPLICATION_FACTOR, 'the replication factor is 1 (or -1)');
      }
      if (topic.assignments.length > 0) {
        return failed(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'partitions are assigned by tailbase');
      }
      const parsed = parseTopicConfigs(topic.configs);
      if (!parsed.ok) return failed(ErrorCode.INVALID_CONFIG, parsed.message);
      const defaults = topicConfigDefaults(name);
      let configs: TopicConfigs = { ...defaults, ...parsed.configs };
      if (!body.validateOnly) {
        try {
          configs = (await log.ensureTopic(name, parsed.configs)).configs;
          existingNames.add(name);
        } catch (error) {
          return failed(kafkaErrorCode(error), kafkaErrorMessage(error));
        }
      }
      return {
        name,
        topicId: ZERO_UUID,
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        numPartitions: partitions,
        replicationFactor: 1,
        configs: (Object.keys(TOPIC_CONFIG_NAMES) as (keyof TopicConfigs)[]).map((field) => ({
          name: TOPIC_CONFIG_NAMES[field],
          value: configValue(configs, field),
          readOnly: false,
          configSource: configSource(configs, defaults, field),
          isSensitive: false,
        })),
      };
    }
  };
}
