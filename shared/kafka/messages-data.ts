/**
 * The data path: Produce, Fetch, ListOffsets, InitProducerId. Transcribed from Apache Kafka's
 * message definitions, keeping the fields of the versions tailbase supports (validVersions; the
 * reasons are in PROTOCOL.md). Records travel as opaque record batches, zero-copy.
 */
import type { MessageSpec } from './schema.js';

export const produceRequest = {
  apiKey: 0,
  type: 'request',
  name: 'ProduceRequest',
  validVersions: '3-11',
  flexibleVersions: '9+',
  fields: [
    {
      name: 'TransactionalId',
      type: 'string',
      versions: '3+',
      nullableVersions: '3+',
      default: null,
    },
    { name: 'Acks', type: 'int16', versions: '0+' },
    { name: 'TimeoutMs', type: 'int32', versions: '0+' },
    {
      name: 'TopicData',
      type: '[]TopicProduceData',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        {
          name: 'PartitionData',
          type: '[]PartitionProduceData',
          versions: '0+',
          fields: [
            { name: 'Index', type: 'int32', versions: '0+' },
            { name: 'Records', type: 'records', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const produceResponse = {
  apiKey: 0,
  type: 'response',
  name: 'ProduceResponse',
  validVersions: '3-11',
  flexibleVersions: '9+',
  fields: [
    {
      name: 'Responses',
      type: '[]TopicProduceResponse',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        {
          name: 'PartitionResponses',
          type: '[]PartitionProduceResponse',
          versions: '0+',
          fields: [
            { name: 'Index', type: 'int32', versions: '0+' },
            { name: 'ErrorCode', type: 'int16', versions: '0+' },
            { name: 'BaseOffset', type: 'int64', versions: '0+' },
            { name: 'LogAppendTimeMs', type: 'int64', versions: '2+', default: -1 },
            { name: 'LogStartOffset', type: 'int64', versions: '5+', default: -1 },
            {
              name: 'RecordErrors',
              type: '[]BatchIndexAndErrorMessage',
              versions: '8+',
              fields: [
                { name: 'BatchIndex', type: 'int32', versions: '8+' },
                {
                  name: 'BatchIndexErrorMessage',
                  type: 'string',
                  versions: '8+',
                  nullableVersions: '8+',
                  default: null,
                },
              ],
            },
            {
              name: 'ErrorMessage',
              type: 'string',
              versions: '8+',
              nullableVersions: '8+',
              default: null,
            },
            {
              name: 'CurrentLeader',
              type: 'LeaderIdAndEpoch',
              versions: '10+',
              taggedVersions: '10+',
              tag: 0,
              fields: [
                { name: 'LeaderId', type: 'int32', versions: '10+', default: -1 },
                { name: 'LeaderEpoch', type: 'int32', versions: '10+', default: -1 },
              ],
            },
          ],
        },
      ],
    },
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+', default: 0 },
    {
      name: 'NodeEndpoints',
      type: '[]NodeEndpoint',
      versions: '10+',
      taggedVersions: '10+',
      tag: 0,
      fields: [
        { name: 'NodeId', type: 'int32', versions: '10+' },
        { name: 'Host', type: 'string', versions: '10+' },
        { name: 'Port', type: 'int32', versions: '10+' },
        { name: 'Rack', type: 'string', versions: '10+', nullableVersions: '10+', default: null },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const fetchRequest = {
  apiKey: 1,
  type: 'request',
  name: 'FetchRequest',
  validVersions: '4-12',
  flexibleVersions: '12+',
  fields: [
    {
      name: 'ClusterId',
      type: 'string',
      versions: '12+',
      nullableVersions: '12+',
      taggedVersions: '12+',
      tag: 0,
      default: null,
    },
    { name: 'ReplicaId', type: 'int32', versions: '0-14', default: -1 },
    { name: 'MaxWaitMs', type: 'int32', versions: '0+' },
    { name: 'MinBytes', type: 'int32', versions: '0+' },
    { name: 'MaxBytes', type: 'int32', versions: '3+', default: 2147483647 },
    { name: 'IsolationLevel', type: 'int8', versions: '4+', default: 0 },
    { name: 'SessionId', type: 'int32', versions: '7+', default: 0 },
    { name: 'SessionEpoch', type: 'int32', versions: '7+', default: -1 },
    {
      name: 'Topics',
      type: '[]FetchTopic',
      versions: '0+',
      fields: [
        { name: 'Topic', type: 'string', versions: '0-12' },
        {
          name: 'Partitions',
          type: '[]FetchPartition',
          versions: '0+',
          fields: [
            { name: 'Partition', type: 'int32', versions: '0+' },
            { name: 'CurrentLeaderEpoch', type: 'int32', versions: '9+', default: -1 },
            { name: 'FetchOffset', type: 'int64', versions: '0+' },
            { name: 'LastFetchedEpoch', type: 'int32', versions: '12+', default: -1 },
            { name: 'LogStartOffset', type: 'int64', versions: '5+', default: -1 },
            { name: 'PartitionMaxBytes', type: 'int32', versions: '0+' },
          ],
        },
      ],
    },
    {
      name: 'ForgottenTopicsData',
      type: '[]ForgottenTopic',
      versions: '7+',
      fields: [
        { name: 'Topic', type: 'string', versions: '7-12' },
        { name: 'Partitions', type: '[]int32', versions: '7+' },
      ],
    },
    { name: 'RackId', type: 'string', versions: '11+', default: '' },
  ],
} as const satisfies MessageSpec;

export const fetchResponse = {
  apiKey: 1,
  type: 'response',
  name: 'FetchResponse',
  validVersions: '4-12',
  flexibleVersions: '12+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+' },
    { name: 'ErrorCode', type: 'int16', versions: '7+' },
    { name: 'SessionId', type: 'int32', versions: '7+', default: 0 },
    {
      name: 'Responses',
      type: '[]FetchableTopicResponse',
      versions: '0+',
      fields: [
        { name: 'Topic', type: 'string', versions: '0-12' },
        {
          name: 'Partitions',
          type: '[]PartitionData',
          versions: '0+',
          fields: [
            { name: 'PartitionIndex', type: 'int32', versions: '0+' },
            { name: 'ErrorCode', type: 'int16', versions: '0+' },
            { name: 'HighWatermark', type: 'int64', versions: '0+' },
            { name: 'LastStableOffset', type: 'int64', versions: '4+', default: -1 },
            { name: 'LogStartOffset', type: 'int64', versions: '5+', default: -1 },
            {
              name: 'DivergingEpoch',
              type: 'EpochEndOffset',
              versions: '12+',
              taggedVersions: '12+',
              tag: 0,
              fields: [
                { name: 'Epoch', type: 'int32', versions: '12+', default: -1 },
                { name: 'EndOffset', type: 'int64', versions: '12+', default: -1 },
              ],
            },
            {
              name: 'CurrentLeader',
              type: 'LeaderIdAndEpoch',
              versions: '12+',
              taggedVersions: '12+',
              tag: 1,
              fields: [
                { name: 'LeaderId', type: 'int32', versions: '12+', default: -1 },
                { name: 'LeaderEpoch', type: 'int32', versions: '12+', default: -1 },
              ],
            },
            {
              name: 'SnapshotId',
              type: 'SnapshotId',
              versions: '12+',
              taggedVersions: '12+',
              tag: 2,
              fields: [
                { name: 'EndOffset', type: 'int64', versions: '0+', default: -1 },
                { name: 'Epoch', type: 'int32', versions: '0+', default: -1 },
              ],
            },
            {
              name: 'AbortedTransactions',
              type: '[]AbortedTransaction',
              versions: '4+',
              nullableVersions: '4+',
              fields: [
                { name: 'ProducerId', type: 'int64', versions: '4+' },
                { name: 'FirstOffset', type: 'int64', versions: '4+' },
              ],
            },
            { name: 'PreferredReadReplica', type: 'int32', versions: '11+', default: -1 },
            { name: 'Records', type: 'records', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const listOffsetsRequest = {
  apiKey: 2,
  type: 'request',
  name: 'ListOffsetsRequest',
  validVersions: '1-6',
  flexibleVersions: '6+',
  fields: [
    { name: 'ReplicaId', type: 'int32', versions: '0+' },
    { name: 'IsolationLevel', type: 'int8', versions: '2+' },
    {
      name: 'Topics',
      type: '[]ListOffsetsTopic',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        {
          name: 'Partitions',
          type: '[]ListOffsetsPartition',
          versions: '0+',
          fields: [
            { name: 'PartitionIndex', type: 'int32', versions: '0+' },
            { name: 'CurrentLeaderEpoch', type: 'int32', versions: '4+', default: -1 },
            { name: 'Timestamp', type: 'int64', versions: '0+' },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const listOffsetsResponse = {
  apiKey: 2,
  type: 'response',
  name: 'ListOffsetsResponse',
  validVersions: '1-6',
  flexibleVersions: '6+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '2+' },
    {
      name: 'Topics',
      type: '[]ListOffsetsTopicResponse',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        {
          name: 'Partitions',
          type: '[]ListOffsetsPartitionResponse',
          versions: '0+',
          fields: [
            { name: 'PartitionIndex', type: 'int32', versions: '0+' },
            { name: 'ErrorCode', type: 'int16', versions: '0+' },
            { name: 'Timestamp', type: 'int64', versions: '1+', default: -1 },
            { name: 'Offset', type: 'int64', versions: '1+', default: -1 },
            { name: 'LeaderEpoch', type: 'int32', versions: '4+', default: -1 },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const initProducerIdRequest = {
  apiKey: 22,
  type: 'request',
  name: 'InitProducerIdRequest',
  validVersions: '0-4',
  flexibleVersions: '2+',
  fields: [
    { name: 'TransactionalId', type: 'string', versions: '0+', nullableVersions: '0+' },
    { name: 'TransactionTimeoutMs', type: 'int32', versions: '0+' },
    { name: 'ProducerId', type: 'int64', versions: '3+', default: -1 },
    { name: 'ProducerEpoch', type: 'int16', versions: '3+', default: -1 },
  ],
} as const satisfies MessageSpec;

export const initProducerIdResponse = {
  apiKey: 22,
  type: 'response',
  name: 'InitProducerIdResponse',
  validVersions: '0-4',
  flexibleVersions: '2+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '0+' },
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
    { name: 'ProducerId', type: 'int64', versions: '0+', default: -1 },
    { name: 'ProducerEpoch', type: 'int16', versions: '0+' },
  ],
} as const satisfies MessageSpec;
