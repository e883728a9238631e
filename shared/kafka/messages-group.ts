/**
 * Consumer groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch.
 * Transcribed from Apache Kafka's message definitions, keeping the fields of the versions tailbase
 * supports (validVersions; the reasons are in PROTOCOL.md).
 */
import type { MessageSpec } from './schema.js';

export const joinGroupRequest = {
  apiKey: 11,
  type: 'request',
  name: 'JoinGroupRequest',
  validVersions: '2-9',
  flexibleVersions: '6+',
  fields: [
    { name: 'GroupId', type: 'string', versions: '0+' },
    { name: 'SessionTimeoutMs', type: 'int32', versions: '0+' },
    { name: 'RebalanceTimeoutMs', type: 'int32', versions: '1+', default: -1 },
    { name: 'MemberId', type: 'string', versions: '0+' },
    {
      name: 'GroupInstanceId',
      type: 'string',
      versions: '5+',
      nullableVersions: '5+',
      default: null,
    },
    { name: 'ProtocolType', type: 'string', versions: '0+' },
    {
      name: 'Protocols',
      type: '[]JoinGroupRequestProtocol',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        { name: 'Metadata', type: 'bytes', versions: '0+' },
      ],
    },
    { name: 'Reason', type: 'string', versions: '8+', nullableVersions: '8+', default: null },
  ],
} as const satisfies MessageSpec;

export const joinGroupResponse = {
  apiKey: 11,
  type: 'response',
  name: 'JoinGroupResponse',
  validVersions: '2-9',
  flexibleVersions: '6+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '2+' },
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
    { name: 'GenerationId', type: 'int32', versions: '0+', default: -1 },
    { name: 'ProtocolType', type: 'string', versions: '7+', nullableVersions: '7+', default: null },
    { name: 'ProtocolName', type: 'string', versions: '0+', nullableVersions: '7+' },
    { name: 'Leader', type: 'string', versions: '0+' },
    { name: 'SkipAssignment', type: 'bool', versions: '9+', default: false },
    { name: 'MemberId', type: 'string', versions: '0+' },
    {
      name: 'Members',
      type: '[]JoinGroupResponseMember',
      versions: '0+',
      fields: [
        { name: 'MemberId', type: 'string', versions: '0+' },
        {
          name: 'GroupInstanceId',
          type: 'string',
          versions: '5+',
          nullableVersions: '5+',
          default: null,
        },
        { name: 'Metadata', type: 'bytes', versions: '0+' },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const syncGroupRequest = {
  apiKey: 14,
  type: 'request',
  name: 'SyncGroupRequest',
  validVersions: '0-5',
  flexibleVersions: '4+',
  fields: [
    { name: 'GroupId', type: 'string', versions: '0+' },
    { name: 'GenerationId', type: 'int32', versions: '0+' },
    { name: 'MemberId', type: 'string', versions: '0+' },
    {
      name: 'GroupInstanceId',
      type: 'string',
      versions: '3+',
      nullableVersions: '3+',
      default: null,
    },
    { name: 'ProtocolType', type: 'string', versions: '5+', nullableVersions: '5+', default: null },
    { name: 'ProtocolName', type: 'string', versions: '5+', nullableVersions: '5+', default: null },
    {
      name: 'Assignments',
      type: '[]SyncGroupRequestAssignment',
      versions: '0+',
      fields: [
        { name: 'MemberId', type: 'string', versions: '0+' },
        { name: 'Assignment', type: 'bytes', versions: '0+' },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const syncGroupResponse = {
  apiKey: 14,
  type: 'response',
  name: 'SyncGroupResponse',
  validVersions: '0-5',
  flexibleVersions: '4+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+' },
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
    { name: 'ProtocolType', type: 'string', versions: '5+', nullableVersions: '5+', default: null },
    { name: 'ProtocolName', type: 'string', versions: '5+', nullableVersions: '5+', default: null },
    { name: 'Assignment', type: 'bytes', versions: '0+' },
  ],
} as const satisfies MessageSpec;

export const heartbeatRequest = {
  apiKey: 12,
  type: 'request',
  name: 'HeartbeatRequest',
  validVersions: '0-4',
  flexibleVersions: '4+',
  fields: [
    { name: 'GroupId', type: 'string', versions: '0+' },
    { name: 'GenerationId', type: 'int32', versions: '0+' },
    { name: 'MemberId', type: 'string', versions: '0+' },
    {
      name: 'GroupInstanceId',
      type: 'string',
      versions: '3+',
      nullableVersions: '3+',
      default: null,
    },
  ],
} as const satisfies MessageSpec;

export const heartbeatResponse = {
  apiKey: 12,
  type: 'response',
  name: 'HeartbeatResponse',
  validVersions: '0-4',
  flexibleVersions: '4+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+' },
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
  ],
} as const satisfies MessageSpec;

export const leaveGroupRequest = {
  apiKey: 13,
  type: 'request',
  name: 'LeaveGroupRequest',
  validVersions: '0-5',
  flexibleVersions: '4+',
  fields: [
    { name: 'GroupId', type: 'string', versions: '0+' },
    { name: 'MemberId', type: 'string', versions: '0-2' },
    {
      name: 'Members',
      type: '[]MemberIdentity',
      versions: '3+',
      fields: [
        { name: 'MemberId', type: 'string', versions: '3+' },
        {
          name: 'GroupInstanceId',
          type: 'string',
          versions: '3+',
          nullableVersions: '3+',
          default: null,
        },
        { name: 'Reason', type: 'string', versions: '5+', nullableVersions: '5+', default: null },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const leaveGroupResponse = {
  apiKey: 13,
  type: 'response',
  name: 'LeaveGroupResponse',
  validVersions: '0-5',
  flexibleVersions: '4+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '1+' },
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
    {
      name: 'Members',
      type: '[]MemberResponse',
      versions: '3+',
      fields: [
        { name: 'MemberId', type: 'string', versions: '3+' },
        { name: 'GroupInstanceId', type: 'string', versions: '3+', nullableVersions: '3+' },
        { name: 'ErrorCode', type: 'int16', versions: '3+' },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const offsetCommitRequest = {
  apiKey: 8,
  type: 'request',
  name: 'OffsetCommitRequest',
  validVersions: '2-8',
  flexibleVersions: '8+',
  fields: [
    { name: 'GroupId', type: 'string', versions: '0+' },
    { name: 'GenerationIdOrMemberEpoch', type: 'int32', versions: '1+', default: -1 },
    { name: 'MemberId', type: 'string', versions: '1+' },
    {
      name: 'GroupInstanceId',
      type: 'string',
      versions: '7+',
      nullableVersions: '7+',
      default: null,
    },
    { name: 'RetentionTimeMs', type: 'int64', versions: '2-4', default: -1 },
    {
      name: 'Topics',
      type: '[]OffsetCommitRequestTopic',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        {
          name: 'Partitions',
          type: '[]OffsetCommitRequestPartition',
          versions: '0+',
          fields: [
            { name: 'PartitionIndex', type: 'int32', versions: '0+' },
            { name: 'CommittedOffset', type: 'int64', versions: '0+' },
            { name: 'CommittedLeaderEpoch', type: 'int32', versions: '6+', default: -1 },
            { name: 'CommittedMetadata', type: 'string', versions: '0+', nullableVersions: '0+' },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const offsetCommitResponse = {
  apiKey: 8,
  type: 'response',
  name: 'OffsetCommitResponse',
  validVersions: '2-8',
  flexibleVersions: '8+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '3+' },
    {
      name: 'Topics',
      type: '[]OffsetCommitResponseTopic',
      versions: '0+',
      fields: [
        { name: 'Name', type: 'string', versions: '0+' },
        {
          name: 'Partitions',
          type: '[]OffsetCommitResponsePartition',
          versions: '0+',
          fields: [
            { name: 'PartitionIndex', type: 'int32', versions: '0+' },
            { name: 'ErrorCode', type: 'int16', versions: '0+' },
          ],
        },
      ],
    },
  ],
} as const satisfies MessageSpec;

export const offsetFetchRequest = {
  apiKey: 9,
  type: 'request',
  name: 'OffsetFetchRequest',
  validVersions: '1-8',
  flexibleVersions: '6+',
  fields: [
    { name: 'GroupId', type: 'string', versions: '0-7' },
    {
      name: 'Topics',
      type: '[]OffsetFetchRequestTopic',
      versions: '0-7',
      nullableVersions: '2-7',
      fields: [
        { name: 'Name', type: 'string', versions: '0-7' },
        { name: 'PartitionIndexes', type: '[]int32', versions: '0-7' },
      ],
    },
    {
      name: 'Groups',
      type: '[]OffsetFetchRequestGroup',
      versions: '8+',
      fields: [
        { name: 'GroupId', type: 'string', versions: '8+' },
        {
          name: 'Topics',
          type: '[]OffsetFetchRequestTopics',
          versions: '8+',
          nullableVersions: '8+',
          fields: [
            { name: 'Name', type: 'string', versions: '8+' },
            { name: 'PartitionIndexes', type: '[]int32', versions: '8+' },
          ],
        },
      ],
    },
    { name: 'RequireStable', type: 'bool', versions: '7+', default: false },
  ],
} as const satisfies MessageSpec;

export const offsetFetchResponse = {
  apiKey: 9,
  type: 'response',
  name: 'OffsetFetchResponse',
  validVersions: '1-8',
  flexibleVersions: '6+',
  fields: [
    { name: 'ThrottleTimeMs', type: 'int32', versions: '3+' },
    {
      name: 'Topics',
      type: '[]OffsetFetchResponseTopic',
      versions: '0-7',
      fields: [
        { name: 'Name', type: 'string', versions: '0-7' },
        {
          name: 'Partitions',
          type: '[]OffsetFetchResponsePartition',
          versions: '0-7',
          fields: [
            { name: 'PartitionIndex', type: 'int32', versions: '0-7' },
            { name: 'CommittedOffset', type: 'int64', versions: '0-7' },
            { name: 'CommittedLeaderEpoch', type: 'int32', versions: '5-7', default: -1 },
            { name: 'Metadata', type: 'string', versions: '0-7', nullableVersions: '0-7' },
            { name: 'ErrorCode', type: 'int16', versions: '0-7' },
          ],
        },
      ],
    },
    { name: 'ErrorCode', type: 'int16', versions: '2-7', default: 0 },
    {
      name: 'Groups',
      type: '[]OffsetFetchResponseGroup',
      versions: '8+',
      fields: [
        { name: 'GroupId', type: 'string', versions: '8+' },
        {
          name: 'Topics',
          type: '[]OffsetFetchResponseTopics',
          versions: '8+',
          fields: [
            { name: 'Name', type: 'string', versions: '8+' },
            {
              name: 'Partitions',
              type: '[]OffsetFetchResponsePartitions',
              versions: '8+',
              fields: [
                { name: 'PartitionIndex', type: 'int32', versions: '8+' },
                { name: 'CommittedOffset', type: 'int64', versions: '8+' },
                { name: 'CommittedLeaderEpoch', type: 'int32', versions: '8+', default: -1 },
                { name: 'Metadata', type: 'string', versions: '8+', nullableVersions: '8+' },
                { name: 'ErrorCode', type: 'int16', versions: '8+' },
              ],
            },
          ],
        },
        { name: 'ErrorCode', type: 'int16', versions: '8+', default: 0 },
      ],
    },
  ],
} as const satisfies MessageSpec;
