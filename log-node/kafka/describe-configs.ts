/**
 * DescribeConfigs: a topic's five configs with their values and whether each is the node's
 * default; the broker resource shows num.partitions, the partition count of every collection
 * topic (how a Kafka client of tailbase learns it before any collection exists), and
 * tailbase.hosted.partitions, the partitions this log-node stores (how its peers learn it). A
 * topic also answers tailbase.incarnation, read-only: the drops of its name before it.
 */
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { TOPIC_CONFIG_NAMES, type TopicConfigs } from '../../shared/topics.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';
import { HOSTED_PARTITIONS_CONFIG, INCARNATION_CONFIG } from '../../shared/kafka-log/errors.js';
import {
  CONFIG_TYPES,
  configSource,
  configValue,
  topicConfigField,
} from '../../shared/kafka/topic-configs.js';

type DescribeConfigsRequest = RequestBody<typeof ApiKey.DescribeConfigs>;

const NUM_PARTITIONS = 'num.partitions';
/** Kafka's config source and type of the broker resource's configs. */
const STATIC_BROKER_CONFIG = 4;
const CONFIG_TYPE_INT = 3;
/** Kafka's config source of a topic's own config. */
const DYNAMIC_TOPIC_CONFIG = 1;

function brokerConfig(name: string, value: string) {
  return {
    name,
    value,
    readOnly: true,
    configSource: STATIC_BROKER_CONFIG,
    isSensitive: false,
    synonyms: [],
    configType: CONFIG_TYPE_INT,
    documentation: null,
  };
}

/** Kafka's config resource types. */
const RESOURCE_TYPE = { TOPIC: 2, BROKER: 4 } as const;

export function describeConfigsHandler({ log, topicConfigDefaults }: HandlerDeps): KafkaHandler {
  const brokerConfigs = (partitions: number, hosted: readonly number[]) => [
    brokerConfig(NUM_PARTITIONS, String(partitions)),
    brokerConfig(HOSTED_PARTITIONS_CONFIG, hosted.join(',')),
  ];
  return async (body: DescribeConfigsRequest, context: KafkaRequestContext) => {
    const [cluster, existing] = await Promise.all([log.cluster(), log.topics()]);
    const topics = new Map(existing.map((topic) => [topic.name, topic]));
    return {
      throttleTimeMs: 0,
      results: body.resources.map(({ resourceType, resourceName, configurationKeys }) => {
        const result = (errorCode: number, errorMessage: string | null, configs: object[]) => ({
          errorCode,
          errorMessage,
          resourceType,
          resourceName,
          configs,
        });
        if (!context.may('read')) {
          return result(
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            'describing needs the read scope',
            [],
          );
        }
        if (resourceType === RESOURCE_TYPE.BROKER) {
          const configs = brokerConfigs(cluster.partitions, cluster.hostedPartitions).filter(
            (config) => configurationKeys === null || configurationKeys.includes(config.name),
          );
          return result(ErrorCode.NONE, null, configs);
        }
        if (resourceType !== RESOURCE_TYPE.TOPIC) {
          return result(ErrorCode.INVALID_REQUEST, 'only topic and broker resources', []);
        }
        const topic = topics.get(resourceName);
        if (!topic) {
          return result(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            `topic ${resourceName} does not exist`,
            [],
          );
        }
        const defaults = topicConfigDefaults(topic.name);
        const fields =
          configurationKeys === null
            ? (Object.keys(TOPIC_CONFIG_NAMES) as (keyof TopicConfigs)[])
            : configurationKeys.flatMap((name) => topicConfigField(name) ?? []);
        const configs: object[] = fields.map((field) => ({
          name: TOPIC_CONFIG_NAMES[field],
          value: configValue(topic.configs, field),
          readOnly: false,
          configSource: configSource(topic.configs, defaults, field),
          isSensitive: false,
          synonyms: [],
          configType: CONFIG_TYPES[field],
          documentation: null,
        }));
        if (configurationKeys === null || configurationKeys.includes(INCARNATION_CONFIG)) {
          configs.push({
            ...brokerConfig(INCARNATION_CONFIG, String(topic.incarnation ?? 0)),
            configSource: DYNAMIC_TOPIC_CONFIG,
          });
        }
        return result(ErrorCode.NONE, null, configs);
      }),
    };
  };
}
