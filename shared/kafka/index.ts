/**
 * The Kafka wire-protocol codec: what a Kafka listener imports. PROTOCOL.md describes how it is
 * organized, the versions supported and why, and its limits.
 */
export { ApiKey, KAFKA_APIS, supportedVersions, isSupportedVersion } from './apis.js';
export type { ApiName, ApiOf, ApiSpec, ApiVersionRange } from './apis.js';
export { REQUEST_ELEMENTS_MAX } from './codec.js';
export { ErrorCode } from './error-codes.js';
export type { ErrorCodeName, ErrorCodeValue } from './error-codes.js';
export { KafkaDecodeError, KafkaEncodeError } from './errors.js';
export { FRAME_BYTES_MAX_DEFAULT, FRAME_SIZE_BYTES, KafkaFrameSplitter } from './frames.js';
export { SCHEMA_DEPTH_MAX, ZERO_UUID } from './plan.js';
export {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  encodeResponseChunks,
  unsupportedVersionResponse,
} from './protocol.js';
export type {
  DecodeRequestOptions,
  DecodedRequest,
  KafkaRequest,
  RequestBody,
  RequestHeader,
  RequestInput,
  ResponseBody,
  ResponseInput,
  UnsupportedKafkaRequest,
} from './protocol.js';
export type { BodyInput, BodyOf, FieldSpec, MessageSpec } from './schema.js';
export { VARINT32_BYTES_MAX } from './wire-reader.js';
export { ENCODE_REFERENCE_BYTES_MIN } from './wire-writer.js';
