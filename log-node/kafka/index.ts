/** The Kafka listener's public surface: start one over a LogClient, and add APIs to it. */
export { startKafkaListener, BROKER_NODE_ID, type KafkaListener } from './listener.js';
export {
  kafkaListenerDefaults,
  type KafkaListenerConfig,
  type KafkaListenerLimits,
  type KafkaListenerOptions,
} from './config.js';
export {
  CloseConnection,
  NO_RESPONSE,
  type KafkaBroker,
  type KafkaHandler,
  type KafkaHandlers,
  type KafkaRequestContext,
} from './handler.js';
export { kafkaErrorCode, kafkaErrorMessage } from './error-codes.js';
