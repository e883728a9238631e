/**
 * The log contract over the Kafka protocol: what a gateway or serve-node uses to reach a log of
 * tailbase log-nodes or a Kafka-compatible cluster (`--log kafka://host:port,...`).
 */
export { KafkaLogClient } from './kafka-log-client.js';
export {
  kafkaBootstrapOf,
  kafkaLogDefaults,
  parseBrokerAddress,
  type KafkaLogLimits,
  type KafkaLogOptions,
  type KafkaSaslPlain,
  type KafkaTls,
} from './config.js';
export { DUPLICATE_BATCH_MESSAGE } from './errors.js';
export {
  groupMemberDefaults,
  type GroupGeneration,
  type GroupMember,
  type GroupMemberLimits,
  type GroupMemberOptions,
} from './group-member.js';
