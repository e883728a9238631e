/**
 * Requests and responses as whole frames: the header, then the body the API's declaration
 * describes at the frame's version. A broker decodes requests and encodes responses; a client (the
 * tests, a peer) does the reverse with the same declarations.
 *
 * Frames here are what KafkaFrameSplitter yields: the bytes after the int32 size. Encoders return
 * frames with the size in front, ready for the socket.
 */
import {
  ApiKey,
  apiSpec,
  isSupportedVersion,
  supportedVersions,
  type ApiName,
  type ApiOf,
  type ApiSpec,
  type KAFKA_APIS,
} from './apis.js';
import { encodeStruct, decodeStruct, REQUEST_ELEMENTS_MAX, type Body } from './codec.js';
import { ErrorCode } from './error-codes.js';
import { KafkaDecodeError, KafkaEncodeError } from './errors.js';
import { requestHeader, responseHeader } from './messages-header.js';
import { planOf } from './plan.js';
import { inVersions, type BodyInput, type BodyOf } from './schema.js';
import { WireReader } from './wire-reader.js';
import { WireWriter } from './wire-writer.js';

type Apis = typeof KAFKA_APIS;

export type RequestBody<K extends ApiKey> = BodyOf<ApiOf<K>['request']['fields']>;
export type ResponseBody<K extends ApiKey> = BodyOf<ApiOf<K>['response']['fields']>;
export type RequestInput<K extends ApiKey> = BodyInput<ApiOf<K>['request']['fields']>;
export type ResponseInput<K extends ApiKey> = BodyInput<ApiOf<K>['response']['fields']>;

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** A request of a supported API and version; switch on `apiKey` to narrow `body`. */
export type KafkaRequest = {
  [N in ApiName]: RequestHeader & {
    kind: 'request';
    apiKey: Apis[N]['request']['apiKey'];
    body: BodyOf<Apis[N]['request']['fields']>;
  };
}[ApiName];

/**
 * A request whose header reads but whose API key is unknown or whose version is outside the
 * supported range: its body is left unread. Kafka answers an ApiVersions one with a v0
 * ApiVersions response carrying UNSUPPORTED_VERSION and the supported ranges (so the client can
 * retry with one of them: unsupportedVersionResponse) and closes the connection on any other.
 */
export interface UnsupportedKafkaRequest extends RequestHeader {
  kind: 'unknown-api' | 'unsupported-version';
}

export type DecodedRequest = KafkaRequest | UnsupportedKafkaRequest;

/** Request header v2 for the flexible versions of an API, v1 for the classic ones. */
function requestHeaderVersion(api: ApiSpec, apiVersion: number): number {
  return inVersions(api.request.flexibleVersions, apiVersion) ? 2 : 1;
}

function responseHeaderVersion(api: ApiSpec, apiVersion: number): number {
  if (api.responseHeaderAlwaysClassic) return 0;
  return inVersions(api.response.flexibleVersions, apiVersion) ? 1 : 0;
}

export interface DecodeRequestOptions {
  /**
   * How many array elements the body may decode to, all its arrays together (nested ones too):
   * REQUEST_ELEMENTS_MAX unless given. Past it the frame fails as KafkaDecodeError `elements`,
   * checked on each array's count before the array is allocated.
   */
  elementsMax?: number;
}

/**
 * Decodes one request frame. A frame that is not a well-formed request (cut short, a length past
 * its end, bytes after its body, bad UTF-8, more array elements than options.elementsMax, ...)
 * throws KafkaDecodeError: the connection should be closed, as Kafka does.
 */
export function decodeRequest(frame: Buffer, options?: DecodeRequestOptions): DecodedRequest {
  const reader = new WireReader(frame);
  reader.elementsMax = reader.elementsLeft = options?.elementsMax ?? REQUEST_ELEMENTS_MAX;
  const apiKey = reader.int16('requestApiKey');
  const apiVersion = reader.int16('requestApiVersion');
  reader.at = 0;
  const api = apiSpec(apiKey);
  if (!api || !isSupportedVersion(apiKey, apiVersion)) {
    const header = readRequestHeader(reader, 1);
    return { kind: api ? 'unsupported-version' : 'unknown-api', ...header };
  }
  const header = readRequestHeader(reader, requestHeaderVersion(api, apiVersion));
  const body = decodeStruct(reader, planOf(api.request, apiVersion));
  expectEnd(reader, api.request.name);
  return { kind: 'request', ...header, body } as KafkaRequest;
}

function readRequestHeader(reader: WireReader, version: number): RequestHeader {
  const header = decodeStruct(reader, planOf(requestHeader, version));
  return {
    apiKey: header.requestApiKey as number,
    apiVersion: header.requestApiVersion as number,
    correlationId: header.correlationId as number,
    clientId: header.clientId as string | null,
  };
}

function expectEnd(reader: WireReader, name: string): void {
  if (reader.at !== reader.buf.length) {
    throw new KafkaDecodeError(
      'trailing bytes',
      `${reader.buf.length - reader.at} bytes follow the ${name}`,
      reader.at,
    );
  }
}

function supportedApi(apiKey: number, apiVersion: number): ApiSpec {
  const api = apiSpec(apiKey);
  if (!api) throw new KafkaEncodeError('apiKey', `API key ${apiKey} is not supported`);
  if (!isSupportedVersion(apiKey, apiVersion)) {
    throw new KafkaEncodeError(
      'apiVersion',
      `version ${apiVersion} of API ${apiKey} is not supported`,
    );
  }
  return api;
}

/**
 * A response frame (with its size in front) as chunks: byte fields of ENCODE_REFERENCE_BYTES_MIN
 * or more (record batches) are chunks of their own, not copied; write them with writev/cork.
 */
export function encodeResponseChunks<K extends ApiKey>(
  apiKey: K,
  apiVersion: number,
  correlationId: number,
  body: ResponseInput<K>,
): Buffer[] {
  const api = supportedApi(apiKey, apiVersion);
  const writer = new WireWriter();
  writer.int32(0);
  const headerPlan = planOf(responseHeader, responseHeaderVersion(api, apiVersion));
  encodeStruct(writer, headerPlan, { correlationId });
  encodeStruct(writer, planOf(api.response, apiVersion), body as Body);
  return writer.frameChunks();
}

/** A response frame with its size in front; fields the body leaves out take their defaults. */
export function encodeResponse<K extends ApiKey>(
  apiKey: K,
  apiVersion: number,
  correlationId: number,
  body: ResponseInput<K>,
): Buffer {
  return joined(encodeResponseChunks(apiKey, apiVersion, correlationId, body));
}

/**
 * The answer to a request of an unsupported version: for ApiVersions, Kafka's v0 answer with
 * UNSUPPORTED_VERSION and the supported ranges; for any other API (or an unknown key) null,
 * which means close the connection.
 */
export function unsupportedVersionResponse(request: UnsupportedKafkaRequest): Buffer | null {
  if (request.apiKey !== ApiKey.ApiVersions) return null;
  return encodeResponse(ApiKey.ApiVersions, 0, request.correlationId, {
    errorCode: ErrorCode.UNSUPPORTED_VERSION,
    apiKeys: supportedVersions(),
  });
}

/** A request frame with its size in front: the client side, for tests and peers. */
export function encodeRequest<K extends ApiKey>(
  apiKey: K,
  apiVersion: number,
  correlationId: number,
  clientId: string | null,
  body: RequestInput<K>,
): Buffer {
  const api = supportedApi(apiKey, apiVersion);
  const writer = new WireWriter();
  writer.int32(0);
  const headerPlan = planOf(requestHeader, requestHeaderVersion(api, apiVersion));
  encodeStruct(writer, headerPlan, {
    requestApiKey: apiKey,
    requestApiVersion: apiVersion,
    correlationId,
    clientId,
  });
  encodeStruct(writer, planOf(api.request, apiVersion), body as Body);
  return joined(writer.frameChunks());
}

/** Decodes a response frame to a request the caller sent (whose key and version it knows). */
export function decodeResponse<K extends ApiKey>(
  apiKey: K,
  apiVersion: number,
  frame: Buffer,
): { correlationId: number; body: ResponseBody<K> } {
  const api = apiSpec(apiKey);
  if (!api || !isSupportedVersion(apiKey, apiVersion)) {
    throw new KafkaDecodeError(
      'version',
      `version ${apiVersion} of API ${apiKey} is not supported`,
      0,
    );
  }
  const reader = new WireReader(frame);
  const header = decodeStruct(
    reader,
    planOf(responseHeader, responseHeaderVersion(api, apiVersion)),
  );
  const body = decodeStruct(reader, planOf(api.response, apiVersion));
  expectEnd(reader, api.response.name);
  return { correlationId: header.correlationId as number, body: body as ResponseBody<K> };
}

function joined(chunks: Buffer[]): Buffer {
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}
