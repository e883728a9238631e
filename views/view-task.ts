/**
 * One view's processor: fetches its source's partitions from the log from its frontiers, applies
 * each fetched round in one LMDB transaction (contributions, groups, frontiers and the outbox of
 * changed output documents together), then produces the outbox to the view's topic, keyed by the
 * output key so the default partitioner places it; what the log acknowledged leaves the outbox in
 * the next round's transaction. A crash between the commit and that round re-sends full output
 * values on restart: a duplicate changes nothing. Only after the outbox of a round is acknowledged
 * does the round's frontier become the one read-your-writes waits on, with the view topic's
 * offsets that cover it. Transactions commit on lmdb-js's write thread (`transaction`, not
 * `transactionSync`): every task of a process shares one thread (`tailbase start`'s view thread,
 * a serve-node's main thread with its group heartbeats), which must not stop for their fsyncs. A
 * run resumes from the state its directory holds, unless it is unusable (views/README.md, State
 * when a task moves); on a cluster's member it also reads its own topic back for fenced records
 * (fence-watch.ts), after the acknowledged entries leave the outbox: a fenced key put back with the
 * value last acknowledged must be appended again, not taken for acknowledged.
 */
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import {
  decodeRecords,
  encodeBatch,
  iterateBatches,
  type LogRecord,
  type StoredRecord,
} from '../shared/batch-codec.js';
import { isUnknownTopic, unavailable } from '../shared/errors.js';
import { matches } from '../shared/filter/index.js';
import type { FetchedPartition, FetchOutcome } from '../shared/fetch-answer.js';
import type { LogClient } from '../shared/log-api.js';
import { topicOffsets } from '../shared/topic-offsets.js';
import type { Logger } from '../shared/logger.js';
import { partitionFor } from '../shared/partitioner.js';
import type { ViewProgress } from '../shared/view-api.js';
import type { ParsedView } from '../shared/view-definition.js';
import { claimHeaders, claimKey, epochHeader, fenceRecords } from '../shared/view-epoch.js';
import { GroupingArithmetic, type SourceDocument } from './grouping.js';
import { applyProjection } from './projection.js';
import { stateFileReadable, ViewState } from './view-state.js';
import { FrontierWaiters } from './frontier-waiters.js';
import { claimAbove, watchRecords } from './fence-watch.js';

export interface ViewTaskLimits {
  /** Bytes one fetch asks of each source partition. */
  fetchBytesMax: number;
  /** How long a fetch waits for new source records before the loop goes round, ms. */
  fetchWaitMs: number;
  /** Output records in one append to the view's topic. */
  appendRecordsMax: number;
  /** How long the loop rests after the log failed it before it tries again, ms. */
  retryMs: number;
  /** Reads waiting on this view's frontiers at once. */
  waitersMax: number;
  /**
   * Fetches in a row of the claim check that read nothing of any partition it has yet to read
   * through what it appended; past it the round fails and is retried, its output unpublished.
   * Each fetch after the first waits up to fetchWaitMs for the records to become readable.
   */
  claimCheckStallsMax: number;
}

export const VIEW_TASK_LIMITS_DEFAULT: Readonly<ViewTaskLimits> = Object.freeze({
  fetchBytesMax: 1024 * 1024,
  fetchWaitMs: 200,
  appendRecordsMax: 1000,
  retryMs: 200,
  waitersMax: 10_000,
  claimCheckStallsMax: 3,
});

/** The LMDB file of a view's state, in its directory. */
const STATE_FILE = 'state.mdb';
const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

/** What one task runs: a version of a view, where it reads and where it writes. */
export interface ViewTaskTarget {
  view: ParsedView;
  version: number;
  /** The topic its output goes to (the version's). */
  topic: string;
  /** The topic of its source: a collection's, or a source view's serving version's. */
  sourceTopic: string;
  /**
   * The source is a view: its records are fenced as a serve-node fences them (claims and a
   * deposed writer's records change nothing), so the view is computed from what its readers see.
   */
  sourceIsView: boolean;
  /**
   * Run where another processor may have run it since (a cluster's placement): the view's topic
   * may hold output ahead of the state kept here (empty, or its checkpoint from an earlier run),
   * so its output is held back until it has processed the source as far as the log held when it
   * claimed the view, and no reader sees the view go back.
   */
  takeover: boolean;
}

/** What a task tells its host. */
export interface ViewTaskEvents {
  /** After each round's frontiers are published (the host swaps a rebuild then). */
  published(): void;
  /**
   * After the task stopped because another processor claimed the view above its epoch: it does
   * not claim again by itself (two processors would take the view from each other in turn).
   */
  deposed(): void;
  /**
   * Whether this task's version is still declared, read from the views topic now: asked when the
   * log says its topic does not exist. Absent: it is not (a missing topic is a version gone).
   */
  declared?(): Promise<boolean>;
  /**
   * After the task stopped because its topic is gone and its version is no longer declared (the
   * view dropped, or the version retired by a swap): it never appends again.
   */
  retired?(): void;
}

export class ViewTask {
  private readonly view: ParsedView;
  readonly version: number;
  readonly topic: string;
  private readonly sourceTopic: string;
  private readonly sourceIsView: boolean;
  private readonly state: ViewState;
  private readonly grouping: GroupingArithmetic | null;
  /**
   * The frontiers this run began from, when it resumed from a checkpoint (views/README.md, State
   * when a task moves); null when it began from the source's start.
   */
  private resumedFrom: Map<number, number> | null = null;
  private readonly partitions: number[];
  /** Source end offsets as of the last fetch, for the lag. */
  private readonly sourceEnds = new Map<number, number>();
  readonly waiters: FrontierWaiters;
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly takeover: boolean;
  /** The epoch this run claimed (shared/view-epoch.ts): every record it appends carries it. */
  private epoch: number | null = null;
  /** The offsets of this run's claims in the view's topic, by partition. */
  private readonly claims = new Map<number, number>();
  /** A claim above this run's was read back from the view's topic: another processor runs it. */
  private deposed = false;
  /** Its topic is gone and its version no longer declared: it stopped for good. */
  private retired = false;
  /**
   * The source's end offsets at the claim, where output is held (a cluster's member, or a state
   * marked held by a discard, ViewState.held()): nothing is appended until the state reaches them.
   */
  private holdUntil: Map<number, number> | null = null;
  /** Outbox entries the log acknowledged (key → the value appended), removed by the next round. */
  private readonly acknowledged = new Map<string, string | null>();
  /**
   * The last view offset per partition this run appended and the log acknowledged, noted as each
   * append is: a round that fails after one of its appends (a later chunk, the read of the topic's
   * ends) must not publish its frontiers later without the offsets that cover them.
   */
  private readonly appended = new Map<number, number>();
  /**
   * The last view offset per partition the claim check read and found no claim above this run's
   * through: the log only appends, so what was checked is never read again (claimedBeforeAppended).
   */
  private readonly checkedThrough = new Map<number, number>();
  /** A round applied or appended what no publication has covered yet. */
  private unpublished = false;

  constructor(
    target: ViewTaskTarget,
    dir: string,
    partitionCount: number,
    private readonly log: LogClient,
    private readonly logger: Logger,
    private readonly limits: ViewTaskLimits,
    private readonly events: ViewTaskEvents = {
      published: () => undefined,
      deposed: () => undefined,
    },
  ) {
    const { view } = target;
    this.view = view;
    this.version = target.version;
    this.topic = target.topic;
    this.sourceTopic = target.sourceTopic;
    this.sourceIsView = target.sourceIsView;
    this.takeover = target.takeover;
    this.partitions = Array.from({ length: partitionCount }, (_, p) => p);
    this.waiters = new FrontierWaiters(view.name, limits.waitersMax);
    this.state = this.openState(dir);
    this.grouping = view.kind === 'grouping' ? new GroupingArithmetic(view, this.state) : null;
    // A state that processed nothing yet (a run that stopped after its first transaction) is
    // one that begins from the source's start.
    const frontiers = this.frontiers();
    if ([...frontiers.values()].some((f) => f > 0)) this.resumedFrom = frontiers;
  }

  /** The state kept in `dir`; one that fails to open is deleted and begins empty. */
  private openState(dir: string): ViewState {
    const file = path.join(dir, STATE_FILE);
    try {
      mkdirSync(dir, { recursive: true });
      if (!stateFileReadable(file)) throw new Error(`${file} is not an LMDB file`);
      const state = new ViewState(file);
      state.empty();
      return state;
    } catch (error) {
      this.logger.warn(
        { err: error, view: this.view.name, dir },
        'view state unreadable: deleted, the view is rebuilt from the start of its source',
      );
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      const state = new ViewState(file);
      // At once: a crash before the first round must not leave a state that looks new.
      state.env.transactionSync(() => {
        state.setHeld(true);
        state.setLayout();
      });
      return state;
    }
  }

  start(): void {
    this.loop = this.run().catch((error: unknown) => {
      this.logger.error({ err: error, view: this.view.name }, 'view processor stopped');
    });
    // Not part of the loop: the host stops the task (awaiting the loop) when told.
    void this.loop.then(() => {
      if (this.deposed && !this.stopped) this.events.deposed();
      if (this.retired && !this.stopped) this.events.retired?.();
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.waiters.closeAll();
    // What the log acknowledged of the last round leaves the outbox now, as the next round would
    // have removed it: a clean stop leaves nothing to send again at the next start.
    if (this.acknowledged.size > 0) {
      await this.state.env.transaction(() => this.removeAcknowledged());
    }
    await this.state.close();
  }

  progress(): ViewProgress {
    return {
      version: this.version,
      frontiers: this.partitions.map((partition) => {
        const frontier = this.waiters.frontier(partition);
        const end = this.sourceEnds.get(partition) ?? frontier;
        const coversFrom = this.state.coversFrom(partition);
        const lag = Math.max(0, end - frontier);
        const processed = this.state.frontier(partition);
        const resumedFrom = this.resumedFrom?.get(partition);
        return {
          partition,
          frontier,
          lag,
          processed,
          ...(coversFrom === null ? {} : { coversFrom }),
          ...(resumedFrom === undefined ? {} : { resumedFrom }),
        };
      }),
      refusedRecords: this.state.refused(),
      lateRecords: this.state.late(),
    };
  }

  /** The view topic's offsets its published frontiers are covered by (partition → last offset). */
  viewEnds(): Map<number, number> {
    return this.waiters.ends();
  }

  /** Whether its published frontiers reach every target (source partition → offset). */
  reached(targets: Readonly<Record<string, number>>): boolean {
    return this.partitions.every(
      (partition) => this.waiters.frontier(partition) >= (targets[String(partition)] ?? 0),
    );
  }

  private get windowed(): boolean {
    return this.view.kind === 'grouping' && this.view.window !== null;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    let resumed = false;
    while (!this.stopped) {
      try {
        if (!resumed) {
          // What earlier runs produced is in the topic below its end offsets: those cover the
          // frontiers. Retried like any round: a log busy or electing a leader at start is not
          // a reason to stop processing for good.
          this.epoch ??= await this.claim();
          // The source as it is after the claim: all an earlier owner can have processed.
          const ends = await this.endOffsets(this.sourceTopic);
          await this.discardUnusable(ends);
          await this.state.env.transaction(() => {
            this.state.setLayout();
            // Read back from where an earlier run of this state stopped; else from the claim when
            // it begins from the source's start (it appends every key it builds), from the topic's
            // start when it resumes a state of a layout before `watched`.
            if (!this.takeover) return;
            for (const [partition, claim] of this.claims) {
              if (this.state.watched(partition) !== null) continue;
              this.state.setWatched(partition, this.resumedFrom === null ? claim : 0, -1);
            }
          });
          if (this.takeover || this.state.held()) this.holdUntil = ends;
          else await this.publishResumed();
          resumed = true;
          continue;
        }
        const applied = await this.fetchAndApply();
        if (this.deposed) {
          this.logger.warn(
            { view: this.view.name, topic: this.topic, epoch: this.epoch },
            'view claimed by another processor: this one stops',
          );
          return;
        }
        if (this.holdUntil !== null) {
          if (!this.processedThrough(this.holdUntil) || !this.watchedThroughClaims()) continue;
          if (this.state.held()) await this.state.env.transaction(() => this.state.setHeld(false));
          // Held until published: a failure here publishes again, with the topic's ends.
          if (!(await this.publishResumed())) return;
          this.holdUntil = null;
          continue;
        }
        // Owed until published: a round that fails after it applied or appended (its claim
        // check) is published by the next, which may apply and append nothing.
        if (applied) this.unpublished = true;
        if (await this.produceOutbox()) this.unpublished = true;
        if (await this.fencedAfterAppend()) return;
        if (this.unpublished && !this.stopped) {
          this.waiters.publish(this.frontiers(), this.appended);
          this.unpublished = false;
          this.events.published();
        }
      } catch (error) {
        if (this.stopped) return;
        // A view processor's appends create no topic (views/README.md): its own topic missing
        // means its version may be gone.
        if (isUnknownTopic(error) && !(await this.stillDeclared())) {
          this.retired = true;
          this.logger.warn(
            { view: this.view.name, version: this.version, topic: this.topic },
            'view topic gone and its version no longer declared: this processor stops',
          );
          return;
        }
        this.logger.warn({ err: error, view: this.view.name }, 'view processing failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, this.limits.retryMs));
      }
    }
  }

  /**
   * Whether the version is still declared, its topic missing: a creation not yet seen by every
   * broker, or a topic deleted by hand, is retried; a failed read of the views topic too.
   */
  private async stillDeclared(): Promise<boolean> {
    if (this.events.declared === undefined) return false;
    return this.events.declared().catch((error: unknown) => {
      this.logger.warn({ err: error, view: this.view.name }, 'reading view definitions failed');
      return true;
    });
  }

  /**
   * Empties a state of another layout, or whose checkpoint is past the source's end (the source
   * dropped and declared again, its log truncated: it is of another log): the view is rebuilt
   * from the start.
   */
  private async discardUnusable(ends: ReadonlyMap<number, number>): Promise<void> {
    const past = this.partitions.filter((p) => this.state.frontier(p) > (ends.get(p) ?? 0));
    const usable = this.state.usableLayout(this.view.kind, this.sourceIsView);
    if (past.length === 0 && usable) return;
    this.logger.warn(
      {
        view: this.view.name,
        partitions: past.map((p) => ({
          partition: p,
          checkpoint: this.state.frontier(p),
          end: ends.get(p) ?? 0,
        })),
        layout: usable ? undefined : 'older',
      },
      past.length > 0
        ? "view state past its source's end: discarded, the view is rebuilt from the start of its source"
        : 'view state of an older layout: discarded, the view is rebuilt from the start of its source',
    );
    await this.state.discard(this.view.kind === 'grouping' ? 'groups' : 'docs');
    this.resumedFrom = null;
  }

  /**
   * Produces what the outbox holds, then publishes the frontiers with the topic's end offsets;
   * false, publishing nothing, when a claim above this run's fenced what it appended.
   */
  private async publishResumed(): Promise<boolean> {
    await this.produceOutbox();
    if (await this.fencedAfterAppend()) return false;
    if (this.stopped) return false;
    this.waiters.publish(this.frontiers(), await this.topicEnds());
    this.events.published();
    return true;
  }

  /**
   * Before a round is published: whether another processor's claim above this run's lies before
   * what it appended in some partition, this round or an earlier one that failed after an append
   * (views/README.md, Read-your-writes); nothing is read where the read-back has passed it. The
   * read-back of the round read the topic before the append, and a claim can land in between (a
   * member dealt the view for a moment, whose claim was still in flight when the view moved on):
   * every serve-node skips this run's records after it, so frontiers published with their offsets
   * would answer token reads with a view that lacks them. Then the run is deposed: it stops
   * without publishing, and the member that runs the view next appends the fenced keys again.
   */
  private async fencedAfterAppend(): Promise<boolean> {
    if (!this.takeover || !(await this.claimedBeforeAppended())) return false;
    this.deposed = true;
    this.logger.warn(
      { view: this.view.name, topic: this.topic, epoch: this.epoch },
      'view claimed by another processor before its output: this one stops without publishing it',
    );
    return true;
  }

  /**
   * Reads the view's topic from where the read-back or an earlier check stopped up to the last
   * offset appended in each partition (one fetch of them all at a time, no wait), for a claim above
   * this run's epoch; writes nothing. A read-back that lags a large outbox moves one fetch a round,
   * so a check from the read-back alone would read its whole rest again every round. A partition
   * is asked again until it has been read through what was appended: a Fetch answer is bounded
   * (Kafka's fetch.max.bytes) and filled in the order asked, so one that others filled comes back
   * with no records although the log holds some past the offset asked. Answers that move no
   * partition, claimCheckStallsMax in a row, fail the round rather than let it pass unchecked;
   * every one after the first waits up to fetchWaitMs for records to become readable, so the
   * round fails only after (claimCheckStallsMax - 1) * fetchWaitMs of nothing readable.
   */
  private async claimedBeforeAppended(): Promise<boolean> {
    const from = new Map<number, number>();
    for (const [partition, last] of this.appended) {
      const start = Math.max(
        this.state.watched(partition) ?? 0,
        (this.checkedThrough.get(partition) ?? -1) + 1,
      );
      if (start <= last) from.set(partition, start);
    }
    let stalls = 0;
    while (from.size > 0) {
      const asked = [...from].map(([partition, offset]) => ({
        topic: this.topic,
        partition,
        offset,
      }));
      const fetched = await this.log.fetch(asked, {
        maxBytes: this.limits.fetchBytesMax,
        // After an answer that brought nothing, nothing is readable yet (an answer always holds a
        // whole batch of the first partition with data): asked again at once it brings nothing
        // again, so the log is let wait until the records are readable.
        waitMs: stalls === 0 ? 0 : this.limits.fetchWaitMs,
        signal: this.abort.signal,
      });
      let moved = false;
      for (const outcome of fetched) {
        if ('error' in outcome) throw outcome.error;
        const { partition } = outcome;
        const offset = from.get(partition)!;
        const last = this.appended.get(partition)!;
        let next = Math.max(offset, outcome.logStartOffset);
        for (const batch of iterateBatches(outcome.batches)) {
          for (const record of decodeRecords(batch.bytes)) {
            if (record.offset < offset || record.offset > last) continue;
            if (claimAbove(record, this.epoch!)) return true;
          }
          next = Math.max(next, batch.header.baseOffset + batch.header.lastOffsetDelta + 1);
        }
        if (next === offset) continue;
        moved = true;
        this.checkedThrough.set(partition, Math.min(next, last + 1) - 1);
        if (next > last) from.delete(partition);
        else from.set(partition, next);
      }
      stalls = moved ? 0 : stalls + 1;
      if (stalls >= this.limits.claimCheckStallsMax) {
        throw unavailable(
          'view_claim_check_stalled',
          `the view's topic answered ${stalls} reads in a row with nothing of partitions ` +
            'appended to this round: their output is not published until they are read',
          { topic: this.topic, partitions: Object.fromEntries(from) },
        );
      }
    }
    return false;
  }

  /**
   * Appends a claim to every partition of the view's topic, partition 0's first: its offset is
   * this run's epoch, above every earlier run's, so whatever an earlier owner appends after the
   * claim in a partition is skipped by whoever applies it (shared/view-epoch.ts).
   */
  private async claim(): Promise<number> {
    const claimOf = (partition: number, epoch: number | null) =>
      encodeBatch([
        {
          key: claimKey(partition, this.partitions.length),
          value: null,
          timestampMs: Date.now(),
          headers: claimHeaders(epoch),
        },
      ]);
    const { lastOffset: epoch } = await this.log.append(this.topic, 0, claimOf(0, null));
    this.claims.set(0, epoch);
    await Promise.all(
      this.partitions
        .filter((partition) => partition !== 0)
        .map(async (partition) => {
          const { lastOffset } = await this.log.append(
            this.topic,
            partition,
            claimOf(partition, epoch),
          );
          this.claims.set(partition, lastOffset);
        }),
    );
    this.logger.info({ view: this.view.name, topic: this.topic, epoch }, 'view claimed');
    return epoch;
  }

  /** A topic's end offsets (partition → next offset; absent: the topic does not exist). */
  private async endOffsets(topic: string): Promise<Map<number, number>> {
    const offsets = await topicOffsets(this.log, topic, this.partitions);
    return new Map([...offsets].map(([partition, { endOffset }]) => [partition, endOffset]));
  }

  /** Whether this run has read its own topic back past its claims (fence-watch.ts). */
  private watchedThroughClaims(): boolean {
    if (!this.takeover) return true;
    return [...this.claims].every(([p, claim]) => (this.state.watched(p) ?? 0) > claim);
  }

  /** The output document of a key as the state has it now, as JSON text; null: none. */
  private currentOutput(key: string): string | null {
    if (this.grouping !== null) return this.grouping.output(key);
    const doc = this.state.docs.get(key);
    return typeof doc === 'string' ? doc : null;
  }

  /**
   * Reads back a fetched partition of the view's own topic (in the round's transaction): the keys
   * of fenced records go to the outbox with their current value, to be appended after them.
   */
  private watch(outcome: FetchedPartition): void {
    const { partition } = outcome;
    const from = Math.max(this.state.watched(partition) ?? 0, outcome.logStartOffset);
    const records: StoredRecord[] = [];
    let end = from;
    for (const batch of iterateBatches(outcome.batches)) {
      for (const record of decodeRecords(batch.bytes)) records.push(record);
      end = Math.max(end, batch.header.baseOffset + batch.header.lastOffsetDelta + 1);
    }
    const read = watchRecords(records, from, this.state.watchEpoch(partition), this.epoch!);
    for (const key of read.fenced) this.state.outbox.put(key, { json: this.currentOutput(key) });
    if (read.fenced.length > 0) {
      this.logger.info(
        { view: this.view.name, partition, keys: read.fenced.length },
        'fenced records in the view topic: their keys are appended again',
      );
    }
    if (read.deposedAt !== null) this.deposed = true;
    const next = read.deposedAt === null ? Math.max(read.next, end) : read.next;
    // An idle round reads nothing: no write, so no commit to sync.
    if (
      next !== this.state.watched(partition) ||
      read.epochAfter !== this.state.watchEpoch(partition)
    ) {
      this.state.setWatched(partition, next, read.epochAfter);
    }
  }

  /** Whether the state has processed every source partition up to `ends`. */
  private processedThrough(ends: ReadonlyMap<number, number>): boolean {
    return [...ends].every(([partition, end]) => this.state.frontier(partition) >= end);
  }

  private frontiers(): Map<number, number> {
    return new Map(this.partitions.map((p) => [p, this.state.frontier(p)]));
  }

  /** The view topic's last offset per partition (absent: empty). */
  private async topicEnds(): Promise<Map<number, number>> {
    const ends = new Map<number, number>();
    for (const [partition, end] of await this.endOffsets(this.topic)) {
      if (end > 0) ends.set(partition, end - 1);
    }
    return ends;
  }

  /** One fetch of every source partition, applied in one transaction; true when it moved. */
  private async fetchAndApply(): Promise<boolean> {
    const positions = this.partitions.map((partition) => ({
      topic: this.sourceTopic,
      partition,
      offset: this.state.frontier(partition),
    }));
    // Its own topic too, where another processor may run the view (fence-watch.ts).
    const ownPositions = this.takeover
      ? this.partitions.map((partition) => ({
          topic: this.topic,
          partition,
          offset: this.state.watched(partition) ?? 0,
        }))
      : [];
    const fetched = await this.log.fetch([...positions, ...ownPositions], {
      maxBytes: this.limits.fetchBytesMax,
      waitMs: this.limits.fetchWaitMs,
      signal: this.abort.signal,
    });
    if (this.stopped) return false;
    const outcomes = fetched.slice(0, positions.length);
    const own = fetched.slice(positions.length);
    const starts = await this.logStartsPast(outcomes, this.sourceTopic);
    const ownStarts = await this.logStartsPast(own, this.topic);
    let moved = false;
    await this.state.env.transaction(() => {
      // First: a round that failed before its end left totals in memory, which would trip the
      // read of a fenced key's output below (and be carried into this round).
      this.grouping?.startRound();
      this.removeAcknowledged();
      for (const outcome of own) {
        if (!('error' in outcome)) this.watch(outcome);
        else if (ownStarts.has(outcome.partition)) {
          const { partition } = outcome;
          const start = ownStarts.get(partition)!;
          this.state.setWatched(partition, start, this.state.watchEpoch(partition));
        } else throw outcome.error;
      }
      // Retention removed records the view never saw, all its fetch asked for: it goes on from
      // the log start, and says so.
      for (const [partition, start] of starts) {
        this.state.setFrontier(partition, start);
        this.state.setCoversFrom(partition, start);
        moved = true;
      }
      const touched = new Set<string>();
      let refused = 0;
      let late = 0;
      for (const outcome of outcomes) {
        if ('error' in outcome) {
          if (outcome.error.status !== 404 && !starts.has(outcome.partition)) throw outcome.error;
          continue;
        }
        const { partition } = outcome;
        this.sourceEnds.set(partition, outcome.endOffset);
        const from = this.state.frontier(partition);
        // Retention removed records the view never saw: it goes on from what the log holds, and
        // says so.
        let next = Math.max(from, outcome.logStartOffset);
        if (next > from) this.state.setCoversFrom(partition, next);
        const epochBefore = this.state.sourceEpoch(partition);
        let epoch = epochBefore;
        for (const batch of iterateBatches(outcome.batches)) {
          let records = decodeRecords(batch.bytes).filter((record) => record.offset >= next);
          if (this.sourceIsView)
            ({ kept: records, epochAfter: epoch } = fenceRecords(records, epoch));
          for (const record of records) {
            const source = this.sourceDocument(record.key, record.value, [
              record.timestampMs,
              partition,
              record.offset,
            ]);
            if (this.grouping === null) {
              applyProjection(
                this.view as Extract<ParsedView, { kind: 'projection' }>,
                this.state,
                source,
              );
            } else {
              const outcome = this.windowed
                ? this.grouping.applyEvent(source, touched)
                : this.grouping.apply(source, touched);
              if (outcome === 'refused') refused++;
              if (outcome === 'late') late++;
            }
          }
          next = Math.max(next, batch.header.baseOffset + batch.header.lastOffsetDelta + 1);
        }
        if (next !== from) {
          this.state.setFrontier(partition, next);
          moved = true;
        }
        if (epoch !== epochBefore) this.state.setSourceEpoch(partition, epoch);
      }
      if (refused > 0) this.state.addRefused(refused);
      if (late > 0) this.state.addLate(late);
      this.grouping?.endRound();
      for (const group of touched) {
        this.state.outbox.put(group, { json: this.grouping!.output(group) });
      }
    });
    this.acknowledged.clear();
    return moved;
  }

  /**
   * The partitions of `topic` (the source, or its own) whose fetch was refused because the position
   * asked for is below the log start, with that log start (partition → offset).
   */
  private async logStartsPast(
    outcomes: readonly FetchOutcome[],
    topic: string,
  ): Promise<Map<number, number>> {
    const starts = new Map<number, number>();
    const refused = outcomes.filter((o) => 'error' in o && o.error.code === 'offset_out_of_range');
    if (refused.length === 0) return starts;
    const position = (p: number) =>
      topic === this.sourceTopic ? this.state.frontier(p) : (this.state.watched(p) ?? 0);
    for (const o of await this.log.offsets()) {
      if (o.topic !== topic) continue;
      if (!refused.some((r) => r.partition === o.partition)) continue;
      if (o.logStartOffset > position(o.partition)) starts.set(o.partition, o.logStartOffset);
    }
    return starts;
  }

  private sourceDocument(
    key: string,
    value: Uint8Array | null,
    at: SourceDocument['at'],
  ): SourceDocument {
    if (value === null) return { key, doc: null, at };
    let doc: unknown;
    try {
      doc = JSON.parse(utf8.decode(value));
    } catch {
      return { key, doc: null, at };
    }
    const isObject = typeof doc === 'object' && doc !== null && !Array.isArray(doc);
    if (!isObject || (this.view.filter !== null && !matches(this.view.filter, doc))) {
      return { key, doc: null, at };
    }
    return { key, doc: doc as Record<string, unknown>, at };
  }

  /**
   * Appends every outbox entry the log has not yet acknowledged to the view's topic, in one pass
   * in key order, noting the offsets acknowledged in `appended` as each append is; answers whether
   * it appended anything. What the log acknowledged leaves the outbox in the next round's
   * transaction (removeAcknowledged), not in one of its own: the round is published without
   * waiting for a second commit, and a crash before that round re-sends full values, which change
   * nothing.
   */
  private async produceOutbox(): Promise<boolean> {
    let produced = false;
    const partitionCount = this.partitions.length;
    let after: string | null = null;
    for (;;) {
      const entries: Array<{ key: string; json: string | null }> = [];
      for (const { key, value } of this.state.outbox.getRange(
        after === null ? {} : { start: after },
      )) {
        if (key === after) continue;
        after = key;
        if (this.acknowledged.has(key) && this.acknowledged.get(key) === value.json) continue;
        entries.push({ key, json: value.json });
        if (entries.length === this.limits.appendRecordsMax) break;
      }
      if (entries.length === 0 || this.stopped) return produced;
      // An outbox of many appends (a rebuild's, a takeover's, a large round's): what the log
      // acknowledged leaves it before the next append, so a crash amid it resumes where it
      // stopped instead of sending it all again. A round of one append leaves it in the next
      // round's transaction, with no commit of its own.
      if (this.acknowledged.size > 0) {
        await this.state.env.transaction(() => this.removeAcknowledged());
        this.acknowledged.clear();
      }
      const byPartition = new Map<number, LogRecord[]>();
      const now = Date.now();
      for (const { key, json } of entries) {
        const p = partitionFor(key, partitionCount);
        const record = {
          key,
          value: json === null ? null : encoder.encode(json),
          timestampMs: now,
          headers: [epochHeader(this.epoch!)],
        };
        byPartition.set(p, [...(byPartition.get(p) ?? []), record]);
      }
      await Promise.all(
        [...byPartition].map(async ([partition, records]) => {
          const { lastOffset } = await this.log.append(this.topic, partition, encodeBatch(records));
          this.appended.set(partition, Math.max(lastOffset, this.appended.get(partition) ?? -1));
          produced = true;
        }),
      );
      for (const { key, json } of entries) this.acknowledged.set(key, json);
    }
  }

  /**
   * Inside a round's transaction: removes the outbox entries the log acknowledged, those still
   * holding the value it acknowledged (the round after may change them again).
   */
  private removeAcknowledged(): void {
    for (const [key, json] of this.acknowledged) {
      const current = this.state.outbox.get(key);
      if (current !== undefined && current.json === json) this.state.outbox.remove(key);
    }
  }
}
