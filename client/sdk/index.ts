/**
 * The typed client, the package's entry point: `import { Tailbase } from 'tailbase'`. It runs on
 * Node 20 and in browsers: fetch only, and no module it loads imports a Node built-in
 * (test/unit/client-entry.test.ts walks the emitted module graph).
 */
export { Tailbase, type TailbaseOptions } from './tailbase.js';
export {
  Collection,
  BULK_CHUNK_BYTES_DEFAULT,
  BULK_CHUNK_RECORDS_DEFAULT,
  PAGES_MAX_DEFAULT,
} from './collection.js';
export { View } from './view.js';
export {
  type ChangesOptions,
  FEED_BACKOFF_MS_FIRST,
  FEED_BACKOFF_MS_MAX,
  FEED_RECONNECTS_MAX_DEFAULT,
  isReset,
} from './change-feed.js';
export { RETRY_DEFAULT, type RetryPolicy } from './retry.js';
export { REQUEST_TIMEOUT_MS_DEFAULT } from './transport.js';
export { TailbaseError, type ErrorBody, type ErrorDetails } from '../../shared/errors.js';
export {
  CONSISTENCY_LEVELS,
  TOKEN_HEADER,
  WRITE_WAITS,
  type Consistency,
  type WriteWait,
} from '../../gateway/api/constants.js';
export type * from './types.js';
export type {
  BulkAnswer,
  ChangeEvent,
  ChangeLine,
  ChangeReset,
  CollectionBytes,
  CollectionList,
  CollectionSummary,
  DropAnswer,
  FacetCounts,
  RebuildAnswer,
  ServeNodeStatus,
  SettingsAnswer,
  SettingsBody,
  SettingsPatch,
  SettingsView,
  SearchSettings,
  Status,
  TopicConfigs,
  ViewDefinitionBody,
  ViewDropAnswer,
  ViewInfo,
  ViewList,
  WriteAnswer,
} from '../../gateway/api/index.js';
