/**
 * Discovery and administration: ApiVersions, Metadata, FindCoordinator, CreateTopics, DeleteTopics,
 * DescribeConfigs, DescribeLogDirs, IncrementalAlterConfigs. Transcribed from Apache Kafka's message definitions, keeping the fields of the
 * versions tailbase supports (validVersions; the reasons are in PROTOCOL.md).
 */
import type { MessageSpec } from './schema.js';

export const apiVersionsRequest = {
  apiKey: 18,
  type: 'request',
  name: 'ApiVersionsRequest',
  validVersions: '0-3',
  flexibleVersions: '3+',
  fields: [
    { name: 'ClientSoftwareName', type: 'string', versions: '3+' },
    { name: 'ClientSoftwareVersion', type: 'string', versions: '3+' },
  ],
} as const satisfies MessageSpec;

export const apiVersionsResponse = {
  apiKey: 18,
  type: 'response',
  name: 'ApiVersionsResponse',
  validVersions: '0-3',
  flexibleVersions: '3+',
  fields: [
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
    {
      name: 'ApiKeys',
      type: '[]ApiVersion',
      versions: '0+',
      fields: [
        { name: 'ApiKey', type: 'int16', versions: '0+' },
        { name: 'MinVersion', type: 'int16', versions: '0+' },
        { name: 'MaxVersion', type: 'int16', versions: '0+' },
      ],
    },
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+' },
    {
      name: 'SupportedFeatures',
      type: '[]SupportedFeatureKey',
      versions: '3+',
      taggedVersions: '3+',
      tag: 0,
      fields: [
        { name: 'Name', type: 'string', versions: '3+' },
        { name: 'MinVersion', type: 'int16', versions: '3+' },
        { name: 'MaxVersion', type: 'int16', versions: '3+' },
      ],
    },
    {
      name: 'FinalizedFeaturesEpoch',
      type: 'int64',
      versions: '3+',
      taggedVersions: '3+',
      tag: 1,
      default: -1,
    },
    {
      name: 'FinalizedFeatures',
      type: '[]FinalizedFeatureKey',
      versions: '3+',
      taggedVersions: '3+',
      tag: 2,
      fields: [
        { name: 'Name', type: 'string', versions: '3+' },
        { name: 'MaxVersionLevel', type: 'int16', versions: '3+' },
        { name: 'MinVersionLevel', type: 'int16', versions: '3+' },
      ],
    },
    {
      name: 'ZkMigrationReady',
      type: 'bool',
      versions: '3+',
      taggedVersions: '3+',
      tag: 3,
      default: false,
    },
  ],
} as const satisfies MessageSpec;

export const metadataRequest = {
  apiKey: 3,
  type: 'request',
  name: 'MetadataRequest',
  validVersions: '1-9',
  flexibleVersions: '9+',
  fields: [
    {
      name: 'Topics',
      type: '[]MetadataRequestTopic',
      versions: '0+',
      nullableVersions: '1+',
      fields: [{ name: 'Name', type: 'string', versions: '0+', nullableVersions: '10+' }],
    },
    { name: 'AllowAutoTopicCreation', type: 'bool', versions: '4+', default: true },
    { name: 'IncludeClusterAuthorizedOperations', type: 'bool', versions: '8-10' },
    { name: 'IncludeTopicAuthorizedOperations', type: 'bool', versions: '8+' },
  ],
} as const satisfies MessageSpec;

export const metadataResponse = {
  apiKey: 3,
  type: 'response',
  name: 'MetadataResponse',
  validVersions: '1-9',
  flexibleVersions: '9+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '3+' },
    {
      name: 'Brokers',
      type: '[]MetadataResponseBroker',
      versions: '0+',
      fields: [
        { name: 'NodeId', type: 'int32', versions: '0+' },
        { name: 'Host', type: 'string', versions: '0+' },
        { name: 'Port', type: 'int32', versions: '0+' },
        { name: 'Rack', type: 'string', versions: '1+', nullableVersions: '1+', default: null },
      ],
    },
    { name: 'ClusterId', type: 'string', versions: '2+', nullableVersions: '2+', default: null },
    { name: 'ControllerId', type: 'int32', versions: '1+', default: -1 },
    {
      name: 'Topics',
      type: '[]MetadataResponseTopic',
      versions: '0+',
      fields: [
        { name: 'ErrorCode', type: 'int16', versions: '0+' },
        { name: 'Name', type: 'string', versions: '0+', nullableVersions: '12+' },
        { name: 'IsInternal', type: 'bool', versions: '1+', default: false },
        {
          name: 'Partitions',
          type: '[]MetadataResponsePartition',
          versions: '0+',
          fields: [
            { name: 'ErrorCode', type: 'int16', versions: '0+' },
            { name: 'PartitionIndex', type: 'int32', versions: '0+' },
            { name: 'LeaderId', type: 'int32', versions: '0+' },
            { name: 'LeaderEpoch', type: 'int32', versions: '7+', default: -1 },
            { name: 'ReplicaNodes', type: '[]int32', versions: '0+' },
            { name: 'IsrNodes', type: '[]int32', versions: '0+' },
            { name: 'OfflineReplicas', type: '[]int32', versions: '5+' },
          ],
        },
        { name: 'TopicAuthorizedOperations', type: 'int32', versions: '8+', default: -2147483648 },
      ],
    },
    { name: 'ClusterAuthorizedOperations', type: 'int32', versions: '8-10', default: -2147483648 },
  ],
} as const satisfies MessageSpec;

export const findCoordinatorRequest = {
  apiKey: 10,
  type: 'request',
  name: 'FindCoordinatorRequest',
  validVersions: '0-4',
  flexibleVersions: '3+',
  fields: [
    { name: 'Key', type: 'string', versions: '0-3' },
    { name: 'KeyType', type: 'int8', versions: '1+', default: 0 },
    { name: 'CoordinatorKeys', type: '[]string', versions: '4+' },
  ],
} as const satisfies MessageSpec;

export const findCoordinatorResponse = {
  apiKey: 10,
  type: 'response',
  name: 'FindCoordinatorResponse',
  validVersions: '0-4',
  flexibleVersions: '3+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+' },
    { name: 'ErrorCode', type: 'int16', versions: '0-3' },
    { name: 'ErrorMessage', type: 'string', versions: '1-3', nullableVersions: '1-3' },
    { name: 'NodeId', type: 'int32', versions: '0-3' },
    { name: 'Host', type: 'string', versions: '0-3' },
    { name: 'Port', type: 'int32', versions: '0-3' },
    {
      name: 'Coordinators',
      type: '[]Coordinator',
      versions: '4+',
      fields: [
        { name: 'Key', type: 'string', versions: '4+' },
        { name: 'NodeId', type: 'int32', versions: '4+' },
        { name: 'Host', type: 'string', versions: '4+' },
        { name: 'Port', type: 'int32', versions: '4+' },
        { name: 'ErrorCode', type: 'int16', versions: '4+' },
        { name: 'ErrorMessage', type: 'string', versions: '4+', nullableVersions: '4+' },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const createTopicsRequest = {
  apiKey: 19,
  type: 'request',
  name: 'CreateTopicsRequest',
  validVersions: '2-7',
  flexibleVersions: '5+',
  fields: [
    {
      name: 'Topics',
      type: '[]CreatableTopic',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        { name: 'NumPartitions', type: 'int32', versions: '0+' },
        { name: 'ReplicationFactor', type: 'int16', versions: '0+' },
        {
          name: 'Assignments',
          type: '[]CreatableReplicaAssignment',
          versions: '0+',
          fields: [
            { name: 'PartitionIndex', type: 'int32', versions: '0+' },
            { name: 'BrokerIds', type: '[]int32', versions: '0+' },
          ],
        },
        {
          name: 'Configs',
          type: '[]CreatableTopicConfig',
          versions: '0+',
          fields: [
            { name: 'Name', type: 'string', versions: '0+' },
            { name: 'Value', type: 'string', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
    { name: 'timeoutMs', type: 'int32', versions: '0+', default: 60000 },
    { name: 'validateOnly', type: 'bool', versions: '1+', default: false },
  ],
} as const satisfies MessageSpec;

export const createTopicsResponse = {
  apiKey: 19,
  type: 'response',
  name: 'CreateTopicsResponse',
  validVersions: '2-7',
  flexibleVersions: '5+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '2+' },
    {
      name: 'Topics',
      type: '[]CreatableTopicResult',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        { name: 'TopicId', type: 'uuid', versions: '7+' },
        { name: 'ErrorCode', type: 'int16', versions: '0+' },
        { name: 'ErrorMessage', type: 'string', versions: '1+', nullableVersions: '0+' },
        {
          name: 'TopicConfigErrorCode',
          type: 'int16',
          versions: '5+',
          taggedVersions: '5+',
          tag: 0,
        },
        { name: 'NumPartitions', type: 'int32', versions: '5+', default: -1 },
        { name: 'ReplicationFactor', type: 'int16', versions: '5+', default: -1 },
        {
          name: 'Configs',
          type: '[]CreatableTopicConfigs',
          versions: '5+',
          nullableVersions: '5+',
          fields: [
            { name: 'Name', type: 'string', versions: '5+' },
            { name: 'Value', type: 'string', versions: '5+', nullableVersions: '5+' },
            { name: 'ReadOnly', type: 'bool', versions: '5+' },
            { name: 'ConfigSource', type: 'int8', versions: '5+', default: -1 },
            { name: 'IsSensitive', type: 'bool', versions: '5+' },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const deleteTopicsRequest = {
  apiKey: 20,
  type: 'request',
  name: 'DeleteTopicsRequest',
  validVersions: '1-5',
  flexibleVersions: '4+',
  fields: [
    { name: 'TopicNames', type: '[]string', versions: '0-5' },
    { name: 'TimeoutMs', type: 'int32', versions: '0+' },
  ],
} as const satisfies MessageSpec;

export const deleteTopicsResponse = {
  apiKey: 20,
  type: 'response',
  name: 'DeleteTopicsResponse',
  validVersions: '1-5',
  flexibleVersions: '4+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+' },
    {
      name: 'Responses',
      type: '[]DeletableTopicResult',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        { name: 'ErrorCode', type: 'int16', versions: '0+' },
        { name: 'ErrorMessage', type: 'string', versions: '5+', nullableVersions: '5+' },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const describeConfigsRequest = {
  apiKey: 32,
  type: 'request',
  name: 'DescribeConfigsRequest',
  validVersions: '1-4',
  flexibleVersions: '4+',
  fields: [
    {
      name: 'Resources',
      type: '[]DescribeConfigsResource',
      versions: '0+',
      fields: [
        { name: 'ResourceType', type: 'int8', versions: '0+' },
        { name: 'ResourceName', type: 'string', versions: '0+' },
        { name: 'ConfigurationKeys', type: '[]string', versions: '0+', nullableVersions: '0+' },
      ],
    },
    { name: 'IncludeSynonyms', type: 'bool', versions: '1+', default: false },
    { name: 'IncludeDocumentation', type: 'bool', versions: '3+', default: false },
  ],
} as const satisfies MessageSpec;

export const describeConfigsResponse = {
  apiKey: 32,
  type: 'response',
  name: 'DescribeConfigsResponse',
  validVersions: '1-4',
  flexibleVersions: '4+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '0+' },
    {
      name: 'Results',
      type: '[]DescribeConfigsResult',
      versions: '0+',
      fields: [
        { name: 'ErrorCode', type: 'int16', versions: '0+' },
        { name: 'ErrorMessage', type: 'string', versions: '0+', nullableVersions: '0+' },
        { name: 'ResourceType', type: 'int8', versions: '0+' },
        { name: 'ResourceName', type: 'string', versions: '0+' },
        {
          name: 'Configs',
          type: '[]DescribeConfigsResourceResult',
          versions: '0+',
          fields: [
            { name: 'Name', type: 'string', versions: '0+' },
            { name: 'Value', type: 'string', versions: '0+', nullableVersions: '0+' },
            { name: 'ReadOnly', type: 'bool', versions: '0+' },
            { name: 'ConfigSource', type: 'int8', versions: '1+', default: -1 },
            { name: 'IsSensitive', type: 'bool', versions: '0+' },
            {
              name: 'Synonyms',
              type: '[]DescribeConfigsSynonym',
              versions: '1+',
              fields: [
                { name: 'Name', type: 'string', versions: '1+' },
                { name: 'Value', type: 'string', versions: '1+', nullableVersions: '0+' },
                { name: 'Source', type: 'int8', versions: '1+' },
              ],
            },
            { name: 'ConfigType', type: 'int8', versions: '3+', default: 0 },
            { name: 'Documentation', type: 'string', versions: '3+', nullableVersions: '0+' },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const incrementalAlterConfigsRequest = {
  apiKey: 44,
  type: 'request',
  name: 'IncrementalAlterConfigsRequest',
  validVersions: '0-1',
  flexibleVersions: '1+',
  fields: [
    {
      name: 'Resources',
      type: '[]AlterConfigsResource',
      versions: '0+',
      fields: [
        { name: 'ResourceType', type: 'int8', versions: '0+' },
        { name: 'ResourceName', type: 'string', versions: '0+' },
        {
          name: 'Configs',
          type: '[]AlterableConfig',
          versions: '0+',
          fields: [
            { name: 'Name', type: 'string', versions: '0+' },
            { name: 'ConfigOperation', type: 'int8', versions: '0+' },
            { name: 'Value', type: 'string', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
    { name: 'ValidateOnly', type: 'bool', versions: '0+' },
  ],
} as const satisfies MessageSpec;

export const incrementalAlterConfigsResponse = {
  apiKey: 44,
  type: 'response',
  name: 'IncrementalAlterConfigsResponse',
  validVersions: '0-1',
  flexibleVersions: '1+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '0+' },
    {
      name: 'Responses',
      type: '[]AlterConfigsResourceResponse',
      versions: '0+',
      fields: [
        { name: 'ErrorCode', type: 'int16', versions: '0+' },
        { name: 'ErrorMessage', type: 'string', versions: '0+', nullableVersions: '0+' },
        { name: 'ResourceType', type: 'int8', versions: '0+' },
        { name: 'ResourceName', type: 'string', versions: '0+' },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const describeLogDirsRequest = {
  apiKey: 35,
  type: 'request',
  name: 'DescribeLogDirsRequest',
  validVersions: '1-4',
  flexibleVersions: '2+',
  fields: [
    {
      name: 'Topics',
      type: '[]DescribableLogDirTopic',
      versions: '0+',
      nullableVersions: '0+',
      fields: [
        { name: 'Topic', type: 'string', versions: '0+' },
        { name: 'Partitions', type: '[]int32', versions: '0+' },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const describeLogDirsResponse = {
  apiKey: 35,
  type: 'response',
  name: 'DescribeLogDirsResponse',
  validVersions: '1-4',
  flexibleVersions: '2+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '0+' },
    { name: 'ErrorCode', type: 'int16', versions: '3+' },
    {
      name: 'Results',
      type: '[]DescribeLogDirsResult',
      versions: '0+',
      fields: [
        { name: 'ErrorCode', type: 'int16', versions: '0+' },
        { name: 'LogDir', type: 'string', versions: '0+' },
        {
          name: 'Topics',
          type: '[]DescribeLogDirsTopic',
          versions: '0+',
          fields: [
            { name: 'Name', type: 'string', versions: '0+' },
            {
              name: 'Partitions',
              type: '[]DescribeLogDirsPartition',
              versions: '0+',
              fields: [
                { name: 'PartitionIndex', type: 'int32', versions: '0+' },
                { name: 'PartitionSize', type: 'int64', versions: '0+' },
                { name: 'OffsetLag', type: 'int64', versions: '0+' },
                { name: 'IsFutureKey', type: 'bool', versions: '0+' },
              ],
            },
          ],
        },
        { name: 'TotalBytes', type: 'int64', versions: '4+', default: -1 },
        { name: 'UsableBytes', type: 'int64', versions: '4+', default: -1 },
      ],
    },
  ],
} as const satisfies MessageSpec;
