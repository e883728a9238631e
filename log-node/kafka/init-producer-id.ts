/**
 * InitProducerId: a new idempotent producer identity from the log, or, on a log-node that does
 * not store partition 0 (only that one hands ids out), from that peer: any broker answers it, as
 * in Kafka. Transactions are not supported, so a transactional id is refused rather than
 * silently treated as idempotence.
 */
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { kafkaErrorCode } from './error-codes.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';

type InitProducerIdRequest = RequestBody<typeof ApiKey.InitProducerId>;

export function initProducerIdHandler({ log, peers }: HandlerDeps): KafkaHandler {
  return async (body: InitProducerIdRequest, context: KafkaRequestContext) => {
    const refused = (errorCode: number) => ({
      throttleTimeMs: 0,
      errorCode,
      producerId: -1,
      producerEpoch: -1,
    });
    // An idempotent producer's id is for writing: Kafka's IdempotentWrite, the write scope here.
    if (!context.may('write')) return refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    if (body.transactionalId !== null) {
      return refused(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    }
    try {
      const { producerId, producerEpoch } =
        peers !== null && !(await log.cluster()).hostedPartitions.includes(0)
          ? await peers.initProducerId()
          : await log.initProducerId();
      return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, producerId, producerEpoch };
    } catch (error) {
      return refused(kafkaErrorCode(error));
    }
  };
}
