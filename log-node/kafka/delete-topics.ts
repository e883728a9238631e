/**
 * DeleteTopics: drops collection topics (admin scope) as `LogClient.deleteTopic` does: the
 * topic's records go, and one created again under the name starts empty. Internal topics stay.
 * Serve-nodes tailing a dropped topic see it gone at their next look at the log's topics and
 * replay the log without it.
 */
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { isCollectionTopic } from '../../shared/topics.js';
import { kafkaErrorCode, kafkaErrorMessage } from './error-codes.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';

type DeleteTopicsRequest = RequestBody<typeof ApiKey.DeleteTopics>;

export function deleteTopicsHandler({ log }: HandlerDeps): KafkaHandler {
  return async (body: DeleteTopicsRequest, context: KafkaRequestContext) => {
    const existing = new Set((await log.topics()).map((topic) => topic.name));
    const responses = [];
    for (const name of body.topicNames) {
      responses.push(await drop(name));
    }
    return { throttleTimeMs: 0, responses };

    async function drop(name: string) {
      const failed = (errorCode: number, errorMessage: string | null) => ({
        name,
        errorCode,
        errorMessage,
      });
      if (!context.may('admin')) {
        return failed(
          ErrorCode.TOPIC_AUTHORIZATION_FAILED,
          'deleting topics needs the admin scope',
        );
      }
      if (!isCollectionTopic(name)) {
        return failed(ErrorCode.INVALID_TOPIC_EXCEPTION, `${name} is not a collection topic`);
      }
      if (!existing.has(name)) {
        return failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${name} does not exist`);
      }
      try {
        await log.deleteTopic(name);
        existing.delete(name);
      } catch (error) {
        return failed(kafkaErrorCode(error), kafkaErrorMessage(error));
      }
      return { name, errorCode: ErrorCode.NONE, errorMessage: null };
    }
  };
}
