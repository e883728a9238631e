/**
 * The bodies of the public API as JSON Schema (OpenAPI 3.1's dialect) that also give their
 * TypeScript types: the gateway's routes answer with these types, the typed client reads them,
 * and GET /openapi.json is generated from them.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { TOKENIZERS } from '../../shared/collection-settings.js';
import type { ServeStatus } from '../../shared/serve-api.js';
import { CONSISTENCY_LEVELS } from './constants.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Offset = Type.Integer({ minimum: 0, description: "a record's offset in its partition" });
const Partition = Type.Integer({ minimum: 0 });
const Token = Type.String({
  description: 'the read-your-writes token (opaque, base64url); send it back as Tailbase-Token',
});

/** Any JSON value; documents are JSON objects, stored and answered as written. */
export const JsonValue = Type.Unknown({ description: 'a JSON value' });
export const ConsistencyLevel = Type.Union(CONSISTENCY_LEVELS.map((level) => Type.Literal(level)));

export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      { code: Type.String(), message: Type.String() },
      { additionalProperties: true, description: 'details (offsets, limits) sit beside code' },
    ),
  },
  { additionalProperties: false },
);
export type ErrorBody = Static<typeof ErrorBody>;

export const WriteAnswer = Type.Object({
  key: Type.String(),
  partition: Partition,
  offset: Offset,
  token: Token,
});
export type WriteAnswer = Static<typeof WriteAnswer>;

export const StoredDocument = Type.Object({ key: Type.String(), value: JsonValue, offset: Offset });
export type StoredDocument = Static<typeof StoredDocument>;

export const ScanPage = Type.Object({
  items: Type.Array(StoredDocument),
  cursor: Nullable(Type.String({ description: 'pass back as `cursor`; null at the end' })),
});
export type ScanPage = Static<typeof ScanPage>;

export const SearchHit = Type.Object({
  key: Type.String(),
  score: Type.Number(),
  value: JsonValue,
  highlights: Type.Optional(Type.Record(Type.String(), Type.String())),
});
export type SearchHit = Static<typeof SearchHit>;

export const FacetCounts = Type.Object({
  values: Type.Array(
    Type.Object({
      value: Type.Union([Type.String(), Type.Number(), Type.Boolean()]),
      count: Type.Integer({ minimum: 0 }),
    }),
  ),
  omitted: Type.Integer({ minimum: 0, description: 'distinct values left out of `values`' }),
  min: Type.Optional(Type.Number()),
  max: Type.Optional(Type.Number()),
});
export type FacetCounts = Static<typeof FacetCounts>;

export const SearchAnswer = Type.Object({
  hits: Type.Array(SearchHit),
  total: Type.Integer({ minimum: 0 }),
  totalRelation: Type.Union([Type.Literal('eq'), Type.Literal('gte')]),
  facets: Type.Optional(Type.Record(Type.String(), FacetCounts)),
});
export type SearchAnswer = Static<typeof SearchAnswer>;

export const BulkItem = Type.Object({
  key: Type.String(),
  value: Type.Union([JsonValue, Type.Null()], { description: 'null deletes the key' }),
});
export type BulkItem = Static<typeof BulkItem>;

export const BulkAnswer = Type.Object({ count: Type.Integer({ minimum: 1 }), token: Token });
export type BulkAnswer = Static<typeof BulkAnswer>;

const FieldPaths = Type.Array(Type.String({ description: 'a field path like "body.text"' }));
const Tokenizer = Type.Union(TOKENIZERS.map((name) => Type.Literal(name)));

/** The search settings a collection holds. */
export const SearchSettings = Type.Object({
  searchable: Nullable(FieldPaths),
  weights: Type.Record(Type.String(), Type.Number({ exclusiveMinimum: 0 })),
  tokenizer: Tokenizer,
  filterable: Type.Optional(FieldPaths),
  sortable: Type.Optional(FieldPaths),
});
export type SearchSettings = Static<typeof SearchSettings>;

/** Kafka's topic configs of the collection (cleanup.policy, retention.ms, ...). */
export const TopicConfigs = Type.Object({
  cleanupPolicy: Type.Union([Type.Literal('compact'), Type.Literal('delete')]),
  retentionMs: Type.Integer(),
  retentionBytes: Type.Integer(),
  deleteRetentionMs: Type.Integer(),
  maxMessageBytes: Type.Integer(),
});
export type TopicConfigs = Static<typeof TopicConfigs>;

/** PUT settings: search settings and topic configs side by side; what is left out keeps its default. */
export const SettingsBody = Type.Composite([
  Type.Partial(SearchSettings),
  Type.Partial(TopicConfigs),
]);
export type SettingsBody = Static<typeof SettingsBody>;

/** PATCH settings: the fields named replace the stored ones; null puts a field's default back. */
export const SettingsPatch = Type.Composite([
  Type.Partial(
    Type.Object({
      searchable: Nullable(FieldPaths),
      weights: Nullable(SearchSettings.properties.weights),
      tokenizer: Nullable(Tokenizer),
      filterable: Nullable(FieldPaths),
      sortable: Nullable(FieldPaths),
    }),
  ),
  Type.Partial(TopicConfigs),
]);
export type SettingsPatch = Static<typeof SettingsPatch>;

/** A collection's settings as the log holds them (GET settings). */
export const SettingsView = Type.Object({
  collection: Type.String(),
  settings: SearchSettings,
  topicConfigs: TopicConfigs,
});
export type SettingsView = Static<typeof SettingsView>;

export const SettingsAnswer = Type.Composite([SettingsView, Type.Object({ token: Token })]);
export type SettingsAnswer = Static<typeof SettingsAnswer>;

const ByteCount = (description: string) => Nullable(Type.Integer({ minimum: 0, description }));

export const CollectionBytes = Type.Object(
  {
    log: ByteCount(
      "its partitions' segment files in the log (DescribeLogDirs); on a replicated Kafka cluster the leaders' replicas only; null: the log cannot say (a broker without DescribeLogDirs, or one that did not answer)",
    ),
    lmdb: ByteCount(
      "its documents in LMDB, summed over the serve-nodes: each node's documents database's pages in proportion to the collection's documents on it; null: a serve-node did not answer",
    ),
    sqlite: ByteCount(
      "its search store in SQLite, summed over the serve-nodes: its FTS5 tables' pages, and the tables collections share in proportion to its documents; null: a serve-node did not answer",
    ),
    total: ByteCount('log + lmdb + sqlite; null when any of them is unknown'),
  },
  { description: 'bytes on disk; null is unknown, never 0' },
);
export type CollectionBytes = Static<typeof CollectionBytes>;

export const CollectionSummary = Type.Object({
  collection: Type.String(),
  incarnation: Type.Integer({
    minimum: 0,
    description: 'how many times a collection of this name was dropped before this one',
  }),
  partitions: Type.Integer({ minimum: 1 }),
  records: Type.Integer({
    minimum: 0,
    description: "records its log holds (end minus start offsets); compaction's gaps included",
  }),
  documents: Nullable(
    Type.Integer({
      minimum: 0,
      description:
        'documents the serve-nodes hold (one replica a partition); null when one did not answer',
    }),
  ),
  settingsVersion: Nullable(
    Type.Integer({
      minimum: 0,
      description: 'the offset of its last settings record in the settings topic; null: defaults',
    }),
  ),
  bytes: CollectionBytes,
  topicConfigs: TopicConfigs,
  view: Type.Boolean({ description: 'a view: read-only, derived by GET /v1/views/{view}' }),
});
export type CollectionSummary = Static<typeof CollectionSummary>;

export const CollectionList = Type.Object({ collections: Type.Array(CollectionSummary) });
export type CollectionList = Static<typeof CollectionList>;

export const DropAnswer = Type.Object({
  collection: Type.String(),
  dropped: Type.Literal(true),
  incarnation: Type.Integer({ minimum: 0, description: 'the incarnation dropped' }),
  serveNodes: Type.Array(Type.Integer({ minimum: 0 }), {
    description: 'the serve-nodes whose stores were replaced without it',
  }),
});
export type DropAnswer = Static<typeof DropAnswer>;

const FieldName = Type.String({
  minLength: 1,
  description: "a top-level property name of the source's documents",
});

const Duration = (description: string) =>
  Type.String({
    pattern: '^[0-9]{1,15}(ms|s|m|h|d)$',
    description: `${description}: an integer and a unit, ms, s, m, h or d`,
    examples: ['15m', '1h'],
  });

/** PUT /v1/views/:v: a projection (`select`) or a grouping (`groupBy` + `aggregates`). */
export const ViewDefinitionBody = Type.Object(
  {
    from: Type.String({ description: 'the source: a collection, or another view' }),
    filter: Type.Optional(
      Type.String({ description: 'only source documents that match (the filter language)' }),
    ),
    select: Type.Optional(
      Type.Array(FieldName, { description: 'a projection: the fields kept, keyed by source key' }),
    ),
    groupBy: Type.Optional(
      Type.Array(FieldName, {
        description: 'a grouping: the output key is the JSON text of the array of their values',
      }),
    ),
    aggregates: Type.Optional(
      Type.Record(
        Type.String(),
        Type.String({
          description: 'count(), sum(f), min(f), max(f), avg(f) or latest(f)',
          examples: ['count()', 'sum(total)'],
        }),
        { description: 'output field → aggregate' },
      ),
    ),
    window: Type.Optional(
      Type.Object(
        {
          field: Type.String({
            minLength: 1,
            description: 'the event-time field: epoch ms or RFC 3339',
          }),
          size: Duration('the window length'),
          advance: Type.Optional(Duration('hopping: a new window every advance (divides size)')),
          grace: Type.Optional(Duration('how long past its end a window still takes records')),
        },
        {
          additionalProperties: false,
          description:
            'a grouping by event-time window: each window is its own document, with windowStart and windowEnd',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ViewDefinitionBody = Static<typeof ViewDefinitionBody>;

export const ViewFrontier = Type.Object({
  partition: Partition,
  frontier: Type.Integer({
    minimum: 0,
    description: 'the next source offset the view has not processed',
  }),
  lag: Type.Integer({ minimum: 0, description: 'source records past the frontier' }),
  coversFrom: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        "the source partition's log start it began from: retention had removed the records before it, which the view does not cover",
    }),
  ),
  resumedFrom: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        'the source offset its processor began from when it resumed from the state it kept (a restart); absent: it began from the start of the source',
    }),
  ),
});

export const ViewRebuildPartition = Type.Object({
  partition: Partition,
  processed: Type.Integer({ minimum: 0, description: 'source offsets processed' }),
  total: Type.Integer({
    minimum: 0,
    description: "the source partition's end offset when the redefinition was declared",
  }),
  coversFrom: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'the log start the rebuild began from: what retention removed is not covered',
    }),
  ),
});

export const ViewRebuild = Type.Object({
  definition: ViewDefinitionBody,
  version: Type.Integer({ minimum: 0 }),
  topic: Type.String({ description: 'the topic the new version is built into' }),
  partitions: Nullable(
    Type.Array(ViewRebuildPartition, {
      description: 'per source partition, processed of total; null: no processor answered',
    }),
  ),
});

export const ViewInfo = Type.Object({
  view: Type.String(),
  definition: ViewDefinitionBody,
  version: Type.Integer({
    minimum: 0,
    description: 'the offset of its definition record in the views topic',
  }),
  topic: Type.String({
    description:
      "the topic of the version reads see: the view's name at first, a name of its own after each redefinition",
  }),
  /**
   * A redefinition being built from the start of the source log beside the version that serves;
   * it replaces it atomically once caught up. Null: none.
   */
  rebuilding: Nullable(ViewRebuild),
  source: Type.String({ description: 'the collection at the root of its chain of sources' }),
  frontiers: Nullable(
    Type.Array(ViewFrontier, {
      description: 'per source partition, how far it has processed; null: no processor answered',
    }),
  ),
  refusedRecords: Nullable(
    Type.Integer({
      minimum: 0,
      description:
        'source records not applied: a group key past 1,024 bytes, or (windowed) no event time',
    }),
  ),
  lateRecords: Nullable(
    Type.Integer({
      minimum: 0,
      description: 'windowed views: source records that missed a window closed past its grace',
    }),
  ),
});
export type ViewInfo = Static<typeof ViewInfo>;

export const ViewList = Type.Object({ views: Type.Array(ViewInfo) });
export type ViewList = Static<typeof ViewList>;

export const ViewDropAnswer = Type.Object({
  view: Type.String(),
  dropped: Type.Literal(true),
});
export type ViewDropAnswer = Static<typeof ViewDropAnswer>;

export const ChangeEvent = Type.Object({
  collection: Type.String(),
  key: Type.String(),
  value: Type.Union([JsonValue, Type.Null()], { description: 'null for a delete' }),
  partition: Partition,
  offset: Offset,
  token: Type.String({ description: 'resumes the feed right after this event' }),
});
export type ChangeEvent = Static<typeof ChangeEvent>;

/**
 * The line a view's feed sends when the version it follows is replaced (a redefinition swapped
 * in, or a resumed token of an earlier version): forget the view's documents, the new version
 * follows from its start.
 */
export const ChangeReset = Type.Object({
  collection: Type.String({ description: 'the view' }),
  reset: Type.Literal(true),
  version: Type.Integer({
    minimum: 0,
    description: "the version followed from now on: its definition's offset in the views topic",
  }),
  token: Type.String({ description: 'resumes the feed right after this line' }),
});
export type ChangeReset = Static<typeof ChangeReset>;

/** One line of the change feed: a document's change, or (a view's feed) a reset. */
export const ChangeLine = Type.Union([ChangeEvent, ChangeReset]);
export type ChangeLine = Static<typeof ChangeLine>;

const MemoryBound = Type.Object(
  {
    name: Type.String(),
    flag: Nullable(
      Type.String({ description: "the node's flag that sets it, without '--'; null: none" }),
    ),
    scope: Type.String({
      description: "where one limit applies: 'apply thread', 'read thread 2', ...",
    }),
    limit: Nullable(
      Type.Number({
        minimum: 0,
        description: 'in units; null: grows with its file, no flag bounds it',
      }),
    ),
    unit: Type.Union([
      Type.Literal('bytes'),
      Type.Literal('entries'),
      Type.Literal('reads'),
      Type.Literal('feeds'),
    ]),
    current: Nullable(
      Type.Number({ minimum: 0, description: 'its size now; null where it cannot be measured' }),
    ),
    kind: Type.Union([Type.Literal('anonymous'), Type.Literal('mapped')], {
      description: "anonymous: the process's own memory; mapped: the OS page cache of a file",
    }),
  },
  {
    description: 'one cache or buffer and its bound (SQLite bounds read back from each connection)',
  },
);

export const Status = Type.Object({
  clusterId: Type.String(),
  version: Type.String({ description: "the gateway's tailbase version" }),
  lagRecords: Type.Integer({
    minimum: 0,
    description: "records the replicas have not applied, over every collection's partitions",
  }),
  ready: Type.Boolean({ description: 'every serve-node is up and ready' }),
  collections: Type.Array(
    Type.Object(
      {
        collection: Type.String(),
        partitions: Type.Integer({ minimum: 0 }),
        endOffset: Type.Integer({
          minimum: 0,
          description: "the sum of its partitions' end offsets",
        }),
        lagRecords: Type.Integer({ minimum: 0 }),
        state: Type.Union(
          (['down', 'rebuilding', 'replaying', 'tailing'] as const).map((state) =>
            Type.Literal(state),
          ),
          { description: 'the worst state of its replicas' },
        ),
      },
      { description: "one row a collection: its partitions' replicas summed up" },
    ),
  ),
  views: Type.Array(
    Type.Object(
      {
        view: Type.String(),
        version: Type.Integer({ minimum: 0 }),
        topic: Type.String({ description: 'the topic of the version reads see' }),
        lagRecords: Nullable(
          Type.Integer({
            minimum: 0,
            description: 'source records it has not processed; null: no processor answered',
          }),
        ),
        rebuilding: Nullable(
          Type.Object({
            version: Type.Integer({ minimum: 0 }),
            processed: Nullable(Type.Integer({ minimum: 0 })),
            total: Type.Integer({
              minimum: 0,
              description: "the source's end offsets when it was declared, summed",
            }),
          }),
        ),
      },
      { description: 'one row a view: its lag, and a redefinition being rebuilt' },
    ),
  ),
  partitions: Type.Array(
    Type.Object({
      topic: Type.String(),
      partition: Partition,
      internal: Type.Boolean({
        description: 'an internal topic (settings, consumer offsets), left out of the sums',
      }),
      logStartOffset: Offset,
      endOffset: Offset,
      replicas: Type.Array(
        Type.Object({
          node: Type.Integer({ minimum: 0, description: 'the serve-node index' }),
          up: Type.Boolean(),
          applied: Nullable(Offset),
          lag: Nullable(Type.Integer({ minimum: 0 })),
          state: Nullable(Type.String()),
        }),
      ),
    }),
  ),
  memory: Type.Array(MemoryBound, {
    description:
      "the gateway's own caches and buffers with their bounds (serve-nodes' in serveNodes)",
  }),
  serveNodes: Type.Array(
    Type.Object({
      node: Type.Integer({ minimum: 0 }),
      nodeId: Nullable(Type.String()),
      up: Type.Boolean(),
      ready: Type.Boolean(),
      partitions: Type.Array(Partition),
      limitConflicts: Type.Array(Type.String()),
      reindexing: Type.Array(
        Type.Object(
          {
            collection: Type.String(),
            settingsOffset: Offset,
            copied: Type.Integer({ minimum: 0 }),
            documents: Type.Integer({ minimum: 0 }),
          },
          {
            description:
              'a collection being re-indexed after a settings change: it answers with its previous settings until copied reaches documents',
          },
        ),
      ),
      segmentMerges: Type.Array(Type.String(), {
        description:
          'collections whose search index is due a merge of its segments, under way or waiting for writes to pause',
      }),
      topkMerges: Type.Boolean({
        description:
          'whether segments of the top-k lists are due a merge, as writes left them or once writes pause',
      }),
      freePages: Type.Integer({
        minimum: 0,
        description:
          "the search store's free pages still to give back to the file system once writes pause",
      }),
      memory: Type.Array(MemoryBound, {
        description:
          "each cache and buffer of the node with its bound; empty while the node's status is unknown",
      }),
    }),
  ),
});
export type Status = Static<typeof Status>;

/** A serve-node's own status; its shape is the serve-node's contract (shared/serve-api.ts). */
export const ServeNodeStatus = Type.Unsafe<ServeStatus>(
  Type.Object({}, { additionalProperties: true, description: "a serve-node's status" }),
);
export type ServeNodeStatus = Static<typeof ServeNodeStatus>;

export const RebuildAnswer = Type.Object({ node: Type.Integer(), rebuilding: Type.Literal(true) });
export type RebuildAnswer = Static<typeof RebuildAnswer>;

export const Health = Type.Object({ ok: Type.Literal(true) });
export const Readiness = Type.Object({
  ready: Type.Boolean(),
  log: Type.Boolean(),
  uncoveredPartitions: Type.Array(Partition),
});
export type Readiness = Static<typeof Readiness>;

export const OpenApiDocument = Type.Object(
  { openapi: Type.String() },
  { additionalProperties: true, description: 'this description' },
);
export const Text = Type.String();
