/**
 * IncrementalAlterConfigs: a collection topic's configs changed (SET) or returned to the node's
 * default (DELETE), with the admin scope, as the HTTP API's settings change them. APPEND and
 * SUBTRACT (list configs) are refused: cleanup.policy takes one value here. validateOnly checks
 * and changes nothing.
 */
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { parseTopicConfigs, topicConfigField } from '../../shared/kafka/topic-configs.js';
import type { TopicConfigs } from '../../shared/topics.js';
import { kafkaErrorCode, kafkaErrorMessage } from './error-codes.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';

type IncrementalAlterConfigsRequest = RequestBody<typeof ApiKey.IncrementalAlterConfigs>;
type Resource = IncrementalAlterConfigsRequest['resources'][number];

const RESOURCE_TOPIC = 2;
const OPERATION = { SET: 0, DELETE: 1 } as const;

export function incrementalAlterConfigsHandler({
  log,
  topicConfigDefaults,
}: HandlerDeps): KafkaHandler {
  return async (body: IncrementalAlterConfigsRequest, context: KafkaRequestContext) => {
    // A change learns of a missing topic from setTopicConfigs (UNKNOWN_TOPIC_OR_PARTITION through
    // kafkaErrorCode); validateOnly changes nothing, so only it needs the listing to say so.
    const listed = body.validateOnly
      ? new Set((await log.topics()).map((topic) => topic.name))
      : null;
    const responses = [];
    for (const resource of body.resources) responses.push(await alter(resource));
    return { throttleTimeMs: 0, responses };

    async function alter({ resourceType, resourceName, configs }: Resource) {
      const answer = (errorCode: number, errorMessage: string | null) => ({
        errorCode,
        errorMessage,
        resourceType,
        resourceName,
      });
      if (!context.may('admin')) {
        return answer(
          ErrorCode.TOPIC_AUTHORIZATION_FAILED,
          'altering configs needs the admin scope',
        );
      }
      if (resourceType !== RESOURCE_TOPIC) {
        return answer(ErrorCode.INVALID_REQUEST, 'only topic configs can be altered');
      }
      if (listed !== null && !listed.has(resourceName)) {
        return answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${resourceName} does not exist`);
      }
      const defaults = topicConfigDefaults(resourceName);
      const reset: Partial<TopicConfigs> = {};
      const set: { name: string; value: string | null }[] = [];
      for (const { name, configOperation, value } of configs) {
        const field = topicConfigField(name);
        if (configOperation === OPERATION.DELETE && field !== undefined) {
          Object.assign(reset, { [field]: defaults[field] });
        } else if (configOperation === OPERATION.SET) {
          set.push({ name, value });
        } else {
          return answer(
            ErrorCode.INVALID_REQUEST,
            `${name}: only SET (0) and DELETE (1) of a tailbase topic config`,
          );
        }
      }
      const parsed = parseTopicConfigs(set);
      if (!parsed.ok) return answer(ErrorCode.INVALID_CONFIG, parsed.message);
      if (body.validateOnly) return answer(ErrorCode.NONE, null);
      try {
        // Not ensureTopic: a topic missing (or dropped meanwhile) must not be created here.
        await log.setTopicConfigs(resourceName, { ...reset, ...parsed.configs });
        return answer(ErrorCode.NONE, null);
      } catch (error) {
        return answer(kafkaErrorCode(error), kafkaErrorMessage(error));
      }
    }
  };
}
