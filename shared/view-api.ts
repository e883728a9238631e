/**
 * What the gateway asks of the view processors (views/), wherever they run: their progress for
 * GET /v1/views, a wait for read-your-writes through a view, and a settle after a definition
 * change. `tailbase start` binds it in-process; a cluster's gateway reads what the processors on
 * the serve-nodes publish (views/cluster-frontiers.ts); a gateway with neither refuses source
 * tokens on view reads (503 `view_processor_unavailable`).
 */

import type { KafkaConnectOptions } from './log-connect.js';

/**
 * The SASL/PLAIN username a cluster's view processor gives the log-nodes, with the cluster secret
 * as its password: the one Kafka principal that may produce to views' topics.
 */
export const VIEW_WRITER_USERNAME = 'tailbase-view-processor';

/**
 * How a view processor reaches a Kafka log: an append never creates a topic (a view's topic is
 * created when its version is declared; one gone was dropped or retired), and given the cluster
 * secret it logs in as VIEW_WRITER_USERNAME.
 */
export function viewWriterKafka(
  kafka: KafkaConnectOptions,
  clusterSecret?: string,
): KafkaConnectOptions {
  const login =
    clusterSecret === undefined
      ? {}
      : { sasl: { username: VIEW_WRITER_USERNAME, password: clusterSecret } };
  return { ...kafka, appendCreatesTopics: false, ...login };
}

export interface ViewPartitionProgress {
  partition: number;
  /** The next source offset the view has not processed (and produced the output of). */
  frontier: number;
  /** Source records past the frontier, as of the last fetch. */
  lag: number;
  /**
   * The next source offset processed in the state (committed; its output may still be on its way
   * to the view's topic): a rebuild's progress, known at once after a restart.
   */
  processed: number;
  /**
   * The source partition's log start when the processor began past 0 (retention removed what was
   * below): the view covers only what the log still held. Absent: it covers the whole log.
   */
  coversFrom?: number;
  /**
   * The source offset this run of the processor began from, when it resumed from the state it
   * kept (a restart, or a cluster member dealt again a view it ran before). Absent: it began
   * from the start of the source log (a new view, a redefinition, a state it could not use).
   */
  resumedFrom?: number;
}

export interface ViewProgress {
  version: number;
  frontiers: ViewPartitionProgress[];
  /** Source documents whose group key would pass the 1,024-byte key limit: counted, not applied. */
  refusedRecords: number;
  /** Windowed views: source records that missed a window already closed (past its grace). */
  lateRecords: number;
}

/** A version's task, as the processors name it (`<name>@<version>`; its state directory too). */
export function taskKey(view: string, version: number): string {
  return `${view}@${version}`;
}

export interface ViewProcessing {
  /** The progress of a version of a view, or null when no processor runs it here (yet). */
  progress(view: string, version: number): ViewProgress | null;
  /**
   * Waits until the view has processed and produced every source offset given (partition →
   * offset, inclusive), then answers the view topic's offsets (partition → last offset) that
   * cover them; 504 `not_caught_up` after `waitMs`.
   */
  waitFor(
    view: string,
    version: number,
    sourceOffsets: ReadonlyMap<number, number>,
    waitMs: number,
  ): Promise<Map<number, number>>;
  /**
   * Runs `append` (a write of view definitions) while no swap is being decided: a swap appended
   * after a drop or a redefinition it did not see would be refused by every reader, but left as
   * its key's last record it would read otherwise once the views topic is compacted.
   */
  exclusive<T>(append: () => Promise<T>): Promise<T>;
  /**
   * Takes every definition acknowledged before the call: a dropped view's processor is stopped, a
   * redefinition's starts.
   */
  settle(): Promise<void>;
}
