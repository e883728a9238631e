/**
 * ApiVersions: the version ranges of the APIs this listener serves (the codec's ranges, limited
 * to the APIs with a handler), so a client never picks one that would close its connection.
 */
import { ApiKey, ErrorCode, supportedVersions } from '../../shared/kafka/index.js';
import type { KafkaHandler } from './handler.js';

export function apiVersionsHandler(served: ReadonlySet<number>): KafkaHandler {
  const apiKeys = supportedVersions().filter((range) => served.has(range.apiKey));
  return () => ({ errorCode: ErrorCode.NONE, apiKeys, throttleTimeMs: 0 });
}

export const SASL_API_KEYS: readonly number[] = [ApiKey.SaslHandshake, ApiKey.SaslAuthenticate];
