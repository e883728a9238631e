/**
 * The APIs tailbase speaks, by key: each one's request and response declarations. The versions
 * supported are the request declaration's validVersions (PROTOCOL.md says why each range), so
 * widening a range is a change to the data alone.
 */
import * as cluster from './messages-cluster.js';
import * as data from './messages-data.js';
import * as group from './messages-group.js';
import * as sasl from './messages-sasl.js';
import { parseVersionRange, type MessageSpec } from './schema.js';

/** A request's or response's declaration, which has an API key (a header's has none). */
export type ApiMessageSpec = MessageSpec & { readonly apiKey: number };

export interface ApiSpec {
  readonly request: ApiMessageSpec;
  readonly response: ApiMessageSpec;
  /**
   * The response header is v0 (no tagged fields) even in flexible versions: ApiVersions only, so a
   * client that does not know the broker's versions yet can always read the answer (KIP-511).
   */
  readonly responseHeaderAlwaysClassic?: true;
}

export const KAFKA_APIS = {
  Produce: { request: data.produceRequest, response: data.produceResponse },
  Fetch: { request: data.fetchRequest, response: data.fetchResponse },
  ListOffsets: { request: data.listOffsetsRequest, response: data.listOffsetsResponse },
  Metadata: { request: cluster.metadataRequest, response: cluster.metadataResponse },
  OffsetCommit: { request: group.offsetCommitRequest, response: group.offsetCommitResponse },
  OffsetFetch: { request: group.offsetFetchRequest, response: group.offsetFetchResponse },
  FindCoordinator: {
    request: cluster.findCoordinatorRequest,
    response: cluster.findCoordinatorResponse,
  },
  JoinGroup: { request: group.joinGroupRequest, response: group.joinGroupResponse },
  Heartbeat: { request: group.heartbeatRequest, response: group.heartbeatResponse },
  LeaveGroup: { request: group.leaveGroupRequest, response: group.leaveGroupResponse },
  SyncGroup: { request: group.syncGroupRequest, response: group.syncGroupResponse },
  SaslHandshake: { request: sasl.saslHandshakeRequest, response: sasl.saslHandshakeResponse },
  ApiVersions: {
    request: cluster.apiVersionsRequest,
    response: cluster.apiVersionsResponse,
    responseHeaderAlwaysClassic: true,
  },
  CreateTopics: { request: cluster.createTopicsRequest, response: cluster.createTopicsResponse },
  DeleteTopics: { request: cluster.deleteTopicsRequest, response: cluster.deleteTopicsResponse },
  InitProducerId: { request: data.initProducerIdRequest, response: data.initProducerIdResponse },
  DescribeConfigs: {
    request: cluster.describeConfigsRequest,
    response: cluster.describeConfigsResponse,
  },
  DescribeLogDirs: {
    request: cluster.describeLogDirsRequest,
    response: cluster.describeLogDirsResponse,
  },
  SaslAuthenticate: {
    request: sasl.saslAuthenticateRequest,
    response: sasl.saslAuthenticateResponse,
  },
  IncrementalAlterConfigs: {
    request: cluster.incrementalAlterConfigsRequest,
    response: cluster.incrementalAlterConfigsResponse,
  },
} as const satisfies Record<string, ApiSpec>;

export type ApiName = keyof typeof KAFKA_APIS;
type Apis = typeof KAFKA_APIS;

/** The API keys by name: `ApiKey.Produce` is 0. */
export const ApiKey = Object.fromEntries(
  Object.entries(KAFKA_APIS).map(([name, api]) => [name, api.request.apiKey]),
) as { readonly [N in ApiName]: Apis[N]['request']['apiKey'] };
export type ApiKey = (typeof ApiKey)[ApiName];

/** The API spec of each key, as a type: `ApiOf<0>` is Produce's. */
export type ApiOf<K extends ApiKey> = {
  [N in ApiName]: Apis[N]['request']['apiKey'] extends K ? Apis[N] : never;
}[ApiName];

export interface ApiVersionRange {
  apiKey: number;
  minVersion: number;
  maxVersion: number;
}

const API_BY_KEY = new Map<number, ApiSpec>(
  Object.values(KAFKA_APIS).map((api: ApiSpec) => [api.request.apiKey, api]),
);

const SUPPORTED: readonly ApiVersionRange[] = [...API_BY_KEY.values()]
  .map((api) => {
    const [minVersion, maxVersion] = parseVersionRange(api.request.validVersions)!;
    return { apiKey: api.request.apiKey, minVersion, maxVersion };
  })
  .sort((a, b) => a.apiKey - b.apiKey);

export function apiSpec(apiKey: number): ApiSpec | undefined {
  return API_BY_KEY.get(apiKey);
}

/** Each API's supported versions, by API key: the `apiKeys` of an ApiVersions answer. */
export function supportedVersions(): ApiVersionRange[] {
  return SUPPORTED.map((range) => ({ ...range }));
}

export function isSupportedVersion(apiKey: number, apiVersion: number): boolean {
  const range = SUPPORTED.find((candidate) => candidate.apiKey === apiKey);
  return range !== undefined && apiVersion >= range.minVersion && apiVersion <= range.maxVersion;
}
