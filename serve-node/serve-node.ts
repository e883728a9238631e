/**
 * A running serve-node: the current store generation, one log fetcher per log-node it tails, the
 * topics it tails (found with `log.topics()` at start, every `topicRefreshMs`, and at once when a
 * read names a collection not tailed yet), the waiting reads, the search store's background
 * steps (re-indexes after settings changes, segment merges: background-steps.ts), the drops of
 * collections whose topic left the log (collection-drops.ts), and the operations that replace the
 * stores (rebuild) or copy them (snapshot).
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unavailable, badRequest } from '../shared/errors.js';
import type { LogClient, TopicPartition } from '../shared/log-api.js';
import { isCollectionTopic, SETTINGS_TOPIC } from '../shared/topics.js';
import type { Logger } from '../shared/logger.js';
import type {
  AppliedOffsets,
  ServeStatus,
  SnapshotResult,
  StoreCheckpoints,
} from '../shared/serve-api.js';
import { searchStoreOptions, type ServeNodeLimits } from './config.js';
import { DOCS_FILE, type DroppingSpace } from './doc-store.js';
import { appliedOfNeed, OffsetWaiters } from './offset-waiters.js';
import { LogFetcher, type TailedPartition } from './log-fetcher.js';
import { BackgroundSteps } from './background-steps.js';
import { CollectionDrops } from './collection-drops.js';
import type { MergePolicy } from './segment-merges.js';
import { Replica } from './replica.js';
import { memoryBounds } from './memory-bounds.js';
import {
  outdatedSearchLayout,
  SEARCH_FILE,
  type SearchStoreOptions,
  type SqliteConnectionMemory,
} from './search-store.js';
import type { ServeNodeCore } from './routes.js';
import {
  createGeneration,
  generationDir,
  removeGeneration,
  SNAPSHOT_MANIFEST,
} from './store-dirs.js';
import { rollBackToLastFlush, unflushedSinceEarlierBoot } from './unflushed-marker.js';
import { ViewTopicFences } from './view-topic-fences.js';

export interface ServeNodeParts {
  nodeId: string;
  clusterId: string;
  dataDir: string;
  generation: number;
  hosted: readonly number[];
  limits: ServeNodeLimits;
  clusterSecret?: string;
  log: LogClient;
  logger: Logger;
}

/**
 * The read threads of this node (read-threads.ts), told of each commit and each change of stores
 * or topics, and asked whether a read of theirs waits.
 */
export interface ReadThreadsLink {
  /** After a commit moved these topic-partitions, or a re-index swap put settings in effect. */
  applied(moved: readonly TopicPartition[]): void;
  /** The stores were replaced, or a topic is tailed that was not. */
  changed(): void;
  /** Whether a read of a read thread waits for one of these partition numbers. */
  waitingOn(partitions: readonly number[]): boolean;
  /** Each read thread's connection to the search store, by thread id, as it last said. */
  connections(): ReadonlyMap<number, SqliteConnectionMemory>;
}

export class ServeNode implements ServeNodeCore {
  readonly hosted: readonly number[];
  readonly limits: ServeNodeLimits;
  readonly clusterSecret?: string;
  readonly waiters: OffsetWaiters;
  private current: Replica;
  private generation: number;
  private fetchers: LogFetcher[] = [];
  private background: BackgroundSteps | null = null;
  /** When the search store merges a table's segments (segment-merges.ts), from the limits. */
  private readonly mergePolicy: MergePolicy & { stepMsMax: number };
  /** The topics tailed: the collections found in the log, and the settings topic once it is. */
  private readonly topics = new Set<string>();
  /** A `log.topics()` call under way: reads naming an unknown collection join it. */
  private discovering: Promise<void> | null = null;
  /**
   * Collections dropped while that call was out: it may have listed them before their drop in the
   * log (as the incarnation dropped), so it leaves them to the look after their drop is marked.
   */
  private readonly droppedDuringLook = new Set<string>();
  private refreshTimer: NodeJS.Timeout | undefined;
  /** The topics the log listed at the last look, with their incarnations (null before the first). */
  private liveTopics: Map<string, number> | null = null;
  /** Set once start() has settled the stores; a drop seen before is start()'s to handle. */
  private started = false;
  /** Set once the first look at the log's topics has been taken. */
  private discovered = false;
  private lastRebuild: { reason: string; atMs: number } | undefined;
  private lastResume: { atMs: number; checkpoints: StoreCheckpoints[] } | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private rebuilding: Promise<void> | null = null;
  /** A snapshot being copied: a rebuild waits for it before it closes the stores. */
  private snapshotting: Promise<SnapshotResult> | null = null;
  private stopped = false;
  private readThreads: ReadThreadsLink | null = null;
  /** Collections dropped in place, one at a time; a topic being dropped is not tailed. */
  private readonly drops: CollectionDrops;
  /** Which topics are views', whose records the epoch rule fences (view-fence.ts). */
  private readonly fences: ViewTopicFences;

  constructor(private readonly parts: ServeNodeParts) {
    this.fences = new ViewTopicFences(parts.log, {
      readBytesMax: parts.limits.logReadBytesMax,
      retryMsMax: parts.limits.retryMsMax,
      logger: parts.logger,
      tails: (topic) => this.topics.has(topic),
      onDecided: (topic) => {
        for (const fetcher of this.fetchers) fetcher.release(topic);
      },
    });
    this.hosted = parts.hosted;
    this.limits = parts.limits;
    this.mergePolicy = {
      quietMs: parts.limits.mergeQuietMs,
      writtenPercent: parts.limits.mergeWrittenPercent,
      stepMsMax: parts.limits.mergeStepMsMax,
    };
    this.clusterSecret = parts.clusterSecret;
    this.generation = parts.generation;
    const dir = generationDir(parts.dataDir, parts.generation);
    // Stores an earlier boot left unflushed open at their last flush; never flushed, a power loss
    // may have torn them, and stores of an older layout cannot be read: those go unopened.
    const afterReboot = unflushedSinceEarlierBoot(dir);
    const reason =
      afterReboot && !rollBackToLastFlush(dir)
        ? 'the machine restarted while the stores held unflushed writes, before their first flush'
        : outdatedSearchLayout(join(dir, SEARCH_FILE));
    if (reason !== null) {
      parts.logger.warn({ reason }, 'wiping the stores and replaying the log');
      removeGeneration(parts.dataDir, parts.generation);
      this.current = this.openNextGeneration(reason);
    } else {
      this.current = new Replica(dir, this.searchOptions(), this.fences);
      if (afterReboot) {
        const checkpoints = this.current.checkpoints();
        this.lastResume = { atMs: Date.now(), checkpoints };
        parts.logger.warn(
          { checkpoints },
          'resuming stores of an earlier boot at their last flush',
        );
      }
    }
    this.waiters = new OffsetWaiters(
      parts.limits.waitersMax,
      appliedOfNeed(() => this.current),
      (needs) => this.hurry(needs.map((need) => need.partition)),
    );
    this.drops = new CollectionDrops({
      replica: () => this.current,
      stepDocsMax: parts.limits.dropStepDocsMax,
      rebuilt: () => this.rebuilding?.catch(() => undefined) ?? Promise.resolve(),
      paused: () => this.snapshotting?.catch(() => undefined) ?? null,
      stopped: () => this.stopped,
      retryMsMax: parts.limits.retryMsMax,
      logger: parts.logger,
      onTablesDropped: (collection) => {
        const moved = this.hosted.map((partition) => ({ topic: collection, partition }));
        this.readThreads?.applied(moved);
        this.waiters.notify(moved);
        this.background?.kick();
      },
    });
  }

  /** From now on, tells `link` of commits and changes (there is one link at most). */
  attachReadThreads(link: ReadThreadsLink): void {
    this.readThreads = link;
  }

  /** A read waits for these partitions: their fetchers apply what they have without lingering. */
  hurry(partitions: readonly number[]): void {
    for (const fetcher of this.fetchers) {
      if (partitions.some((partition) => fetcher.hosts(partition))) fetcher.hurry();
    }
  }

  /** The directory of the stores read now. */
  storesDir(): string {
    return this.current.dir;
  }

  /** The topics tailed. */
  tailedTopics(): string[] {
    return [...this.topics];
  }

  /**
   * Checks the stores against the log's identity and each other, finds the log's topics, then
   * starts tailing them.
   */
  async start(): Promise<void> {
    const stored = this.current.docs.clusterId();
    // Drops a restart interrupted. While LMDB holds no checkpoint of the collection (no later
    // incarnation tailed yet), a kill may have fallen between their two first transactions: the
    // stores may disagree about it until step 2 is taken again.
    const interrupted = this.current.docs.droppingSpaces();
    const lmdbTopics = new Set(this.current.docs.checkpointed().map((tp) => tp.topic));
    const untailed = new Set(
      interrupted.map((drop) => drop.collection).filter((name) => !lmdbTopics.has(name)),
    );
    // Before the first listing: the dropped incarnation's search checkpoints would read as stored
    // and make it skip a collection created again under the name until the next listing.
    for (const collection of untailed) this.current.dropTablesAgain(collection);
    const storedParts = this.current.stored();
    const hosted = new Set(this.hosted);
    const foreign = storedParts.filter(
      (tp) => tp.topic !== SETTINGS_TOPIC && !hosted.has(tp.partition),
    );
    await this.discover();
    // Dropped while this node was away: their documents must not be served, nor a collection
    // created again under the name be read from their checkpoints.
    const vanished = this.vanished(storedParts.map((tp) => tp.topic));
    const reincarnated = this.reincarnated(storedParts.map((tp) => tp.topic));
    const leaving = new Set([...vanished, ...reincarnated]);
    const diverged = storedParts.find(
      (tp) => !leaving.has(tp.topic) && this.current.diverged(tp.topic, tp.partition),
    );
    if (stored !== null && stored !== this.parts.clusterId) {
      await this.replaceStores(
        `the stores came from cluster ${stored}, the log is ${this.parts.clusterId}`,
      );
    } else if (foreign.length > 0) {
      // Their documents would count in the search statistics of the collections they share.
      const named = [...new Set(foreign.map((tp) => tp.partition))].join(', ');
      await this.replaceStores(`the stores hold partitions this node no longer hosts (${named})`);
    } else if (diverged !== undefined) {
      await this.replaceStores(
        `${diverged.topic}/${diverged.partition}: the two stores' checkpoints diverged`,
      );
    } else {
      this.current.docs.setClusterId(this.parts.clusterId);
      for (const dropped of interrupted) this.resumeDrop(dropped);
      for (const collection of vanished) {
        this.dropInBackground(collection, 'the log no longer has it (dropped while away)');
      }
      for (const collection of reincarnated) {
        this.dropInBackground(collection, 'the log holds a later incarnation of it');
      }
      this.startFetchers(false);
    }
    this.started = true;
    this.refreshTimer = setInterval(() => void this.discover(), this.limits.topicRefreshMs);
    this.refreshTimer.unref();
    this.flushTimer = setInterval(() => this.flushStores(), this.limits.storeFlushMs);
    this.flushTimer.unref();
  }

  /** A failed flush is retried at the next interval; the stores stay open and correct meanwhile. */
  private flushStores(): void {
    try {
      this.current.flush();
    } catch (error) {
      this.parts.logger.error({ err: error }, 'flushing the stores failed; retrying');
    }
  }

  replica(): Replica {
    return this.current;
  }

  /** Whether the collection's topic is tailed; if not, the log's topics are looked at again now. */
  tails(collection: string): boolean {
    if (this.topics.has(collection)) return true;
    // The drop's marks look at the log: a look per read meanwhile would find nothing more.
    if (this.drops.beingMarked(collection)) return false;
    void this.discover();
    return false;
  }

  /** The collection's applied offsets, for each hosted partition of its topic. */
  applied(collection: string): AppliedOffsets {
    const applied: AppliedOffsets = {};
    for (const partition of this.hosted) {
      applied[partition] = this.current.applied(collection, partition);
    }
    return applied;
  }

  /**
   * Drops the collection from the stores in place (collection-drops.ts), once no longer tailed;
   * settles once its tables and checkpoints are gone and reads answer nothing of it (steps 1 and
   * 2). Its documents are deleted in the background, the collection listed in status `dropping`
   * until they are (a failure there is logged and retried; a stop's is resumed at start). The
   * log's topics are looked at again once marked, by a look begun after the drop: a collection
   * the log (still, or again) holds under the name is tailed from its start at once, into a key
   * space and tables of its own.
   */
  dropCollection(collection: string, reason: string): Promise<void> {
    this.fences.forget(collection);
    if (this.discovering !== null) this.droppedDuringLook.add(collection);
    if (this.topics.delete(collection)) {
      for (const fetcher of this.fetchers) fetcher.untail(collection);
      this.readThreads?.changed();
    }
    const { marked, done } = this.drops.drop(collection, reason);
    this.logDropFailure(collection, done);
    void marked.then(
      () => this.discoverAfresh(),
      () => undefined,
    );
    return marked;
  }

  /** A drop no caller waits for: its failure is logged by dropCollection. */
  private dropInBackground(collection: string, reason: string): void {
    this.dropCollection(collection, reason).catch(() => undefined);
  }

  /** Deletes what a drop a restart interrupted left of the incarnation it dropped. */
  private resumeDrop(dropped: DroppingSpace): void {
    const done = this.drops.delete(dropped, 'a drop a restart interrupted', this.current);
    this.logDropFailure(dropped.collection, done);
  }

  private logDropFailure(collection: string, done: Promise<void>): void {
    done.catch((error: unknown) => {
      if (this.stopped) return;
      this.parts.logger.error({ err: error, collection }, 'dropping a collection failed');
    });
  }

  /**
   * A look at the log's topics that begins now or after the one out: the one out may have listed
   * them before a change the caller saw (a drop in the log).
   */
  private discoverAfresh(): Promise<void> {
    const out = this.discovering;
    return out === null ? this.discover() : out.then(() => this.discover());
  }

  /**
   * Looks at the log's topics and tails those it does not yet (one look at a time: callers
   * meanwhile share it). A failure is logged; the next look retries.
   */
  discover(): Promise<void> {
    this.discovering ??= this.parts.log
      .topics()
      .then((topics) => {
        this.liveTopics = new Map(topics.map(({ name, incarnation }) => [name, incarnation ?? 0]));
        // A collection dropped in the log (by a gateway, a view's swap, or a Kafka client's
        // DeleteTopics), or dropped and created again: a replica of the log no longer holds it
        // (or holds the new one only). Before start, start's to drop.
        if (this.started) {
          for (const topic of this.vanished(this.topics)) {
            this.dropInBackground(topic, 'the log no longer has it');
          }
          // A rebuild records the incarnations of what it replays (forgetDroppedTopics).
          const replaying = this.rebuilding !== null;
          for (const topic of replaying ? [] : this.reincarnated(this.topics)) {
            this.dropInBackground(topic, 'the log holds a later incarnation of it');
          }
        }
        const tailedBefore = this.topics.size;
        for (const { name, incarnation = 0 } of topics) {
          if (this.stopped || this.topics.has(name) || this.drops.beingMarked(name)) continue;
          if (this.droppedDuringLook.has(name)) continue;
          if (name !== SETTINGS_TOPIC && !isCollectionTopic(name)) continue;
          if (name !== SETTINGS_TOPIC && this.current.docs.incarnation(name) !== incarnation) {
            if (this.current.stored().some((tp) => tp.topic === name)) {
              if (this.started) {
                this.dropInBackground(name, 'the log holds a later incarnation of it');
              }
              continue;
            }
            this.current.docs.setIncarnation(name, incarnation);
          }
          this.topics.add(name);
          for (const fetcher of this.fetchers) fetcher.tail(name, this.partitionsOf(name));
        }
        if (this.topics.size !== tailedBefore) this.readThreads?.changed();
        this.discovered = true;
      })
      .catch((error: unknown) => {
        this.parts.logger.warn({ err: error }, 'listing the log topics failed; retrying');
      })
      .finally(() => {
        this.discovering = null;
        this.droppedDuringLook.clear();
      });
    return this.discovering;
  }

  /**
   * The collection topics among `topics` the log's last listing has as another incarnation than
   * the one the stores hold (dropped and created again while the node held it, or away).
   */
  private reincarnated(topics: Iterable<string>): string[] {
    const live = this.liveTopics;
    if (live === null) return [];
    return [...new Set(topics)].filter((topic) => {
      const incarnation = live.get(topic);
      return (
        isCollectionTopic(topic) &&
        incarnation !== undefined &&
        incarnation !== this.current.docs.incarnation(topic)
      );
    });
  }

  /** The collection topics among `topics` the log's last listing no longer has. */
  private vanished(topics: Iterable<string>): string[] {
    const live = this.liveTopics;
    if (live === null) return [];
    return [...new Set(topics)].filter((topic) => isCollectionTopic(topic) && !live.has(topic));
  }

  /** The partitions of a topic this node tails: the hosted ones, and the internal topic's only. */
  private partitionsOf(topic: string): readonly number[] {
    return topic === SETTINGS_TOPIC ? [0] : this.hosted;
  }

  /** Every topic-partition as its fetcher tails it, by topic then partition. */
  private tailed(): TailedPartition[] {
    return this.fetchers
      .flatMap((fetcher) => fetcher.partitions)
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  }

  status(): ServeStatus {
    const lastDrop = this.drops.last();
    return {
      nodeId: this.parts.nodeId,
      clusterId: this.parts.clusterId,
      hostedPartitions: [...this.hosted],
      partitions: this.tailed().map((tailed) => {
        const applied = this.current.applied(tailed.topic, tailed.partition);
        const lag = Math.max(tailed.logEndOffset - applied, 0);
        const applyRatePerSec = Math.round(tailed.rate.perSecond());
        return {
          topic: tailed.topic,
          partition: tailed.partition,
          applied,
          logEndOffset: tailed.logEndOffset,
          lag,
          applyRatePerSec,
          etaSeconds: lag === 0 ? 0 : applyRatePerSec > 0 ? Math.ceil(lag / applyRatePerSec) : null,
          // From the moment a rebuild is accepted, before its fetchers have stopped (it may wait
          // for a snapshot or an apply under way): the old stores are no longer what is served.
          state: this.rebuilding === null ? tailed.state : 'rebuilding',
          ...(tailed.error === undefined ? {} : { error: tailed.error }),
        };
      }),
      ready: this.ready(),
      limits: {
        scanLimitMax: this.limits.scanLimitMax,
        searchLimitMax: this.limits.searchLimitMax,
        searchDepthMax: this.limits.searchDepthMax,
        waitMsMax: this.limits.waitMsMax,
        getBatchKeysMax: this.limits.getBatchKeysMax,
      },
      ...(this.lastRebuild === undefined ? {} : { lastRebuild: this.lastRebuild }),
      dropping: this.drops.dropping(),
      ...(lastDrop === undefined ? {} : { lastDrop }),
      ...(this.lastResume === undefined ? {} : { lastResume: this.lastResume }),
      reindexing: this.current.reindexing(),
      segmentMerges: this.current.mergesDue(this.mergePolicy),
      topkMerges: this.current.topkMergesDue(this.mergePolicy),
      freePages: this.current.freePagesLeft(),
      applySlices: {
        msMax: this.limits.applySliceMsMax,
        bytesMax: this.limits.applySliceBytesMax,
        recordsMax: this.limits.applySliceRecordsMax,
        bytesMin: this.limits.applySliceBytesMin,
        recordsMin: this.limits.applySliceRecordsMin,
        last: this.fetchers.flatMap((fetcher) => (fetcher.lastSlice ? [fetcher.lastSlice] : [])),
      },
      memory: memoryBounds({
        limits: this.limits,
        applyConnection: this.current.search.connectionMemory(),
        readConnections: this.readThreads?.connections() ?? new Map(),
        waiting: this.waiters.size,
        fetchers: this.fetchers.length,
        lmdbMapBytes: this.current.docs.mapBytes(),
      }),
    };
  }

  ready(): boolean {
    return (
      this.rebuilding === null &&
      this.discovered &&
      this.tailed().every(
        (tailed) =>
          tailed.reachedLog &&
          tailed.logEndOffset - this.current.applied(tailed.topic, tailed.partition) <=
            this.limits.readyLagMax,
      )
    );
  }

  /** Wipes both stores and replays every hosted partition from the log start. */
  rebuild(reason: string): Promise<void> {
    this.rebuilding ??= this.replaceStores(reason).finally(() => {
      this.rebuilding = null;
    });
    return this.rebuilding;
  }

  /**
   * A consistent copy of both stores (each with the checkpoint of its own contents) in `dir`: a
   * new directory (its parent must exist) or an empty one. A rebuild asked for meanwhile waits for
   * it; a snapshot that fails leaves the directory empty.
   */
  async snapshot(dir: string): Promise<SnapshotResult> {
    if (this.rebuilding !== null) throw unavailable('rebuilding', 'the stores are being rebuilt');
    if (existsSync(dir)) {
      if (!statSync(dir).isDirectory()) {
        throw badRequest('invalid_snapshot_dir', `${dir} exists and is not a directory`);
      }
      if (readdirSync(dir).length > 0) {
        throw badRequest('invalid_snapshot_dir', `${dir} exists and is not empty`);
      }
    } else {
      try {
        // Not recursive: Node 20's recursive mkdir spins forever under /proc.
        mkdirSync(dir);
      } catch (error) {
        throw badRequest(
          'invalid_snapshot_dir',
          `cannot create ${dir}: ${(error as Error).message}`,
        );
      }
    }
    // One copy at a time, each behind the one before, so applying stays paused until the last.
    const taking = (this.snapshotting ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.copyStores(dir));
    this.snapshotting = taking;
    try {
      return await taking;
    } catch (error) {
      for (const entry of readdirSync(dir))
        rmSync(join(dir, entry), { recursive: true, force: true });
      throw error;
    } finally {
      if (this.snapshotting === taking) this.snapshotting = null;
    }
  }

  private async copyStores(dir: string): Promise<SnapshotResult> {
    // Applying is paused (applyPaused) while both stores are copied, so both carry one
    // checkpoint: a restore whose LMDB copy lagged its search copy had to re-read records
    // compaction may have removed.
    await this.current.backup(dir);
    const copy = new Replica(dir, this.searchOptions());
    const applied: Record<string, number> = {};
    const stores: Record<string, { docs: number | null; search: number | null }> = {};
    for (const { topic, partition } of copy.stored()) {
      applied[`${topic}/${partition}`] = copy.applied(topic, partition);
      stores[`${topic}/${partition}`] = {
        docs: copy.docs.applied(topic, partition),
        search: copy.search.applied(topic, partition),
      };
    }
    await copy.close();
    rmSync(join(dir, `${DOCS_FILE}-lock`), { force: true });
    writeFileSync(
      join(dir, SNAPSHOT_MANIFEST),
      JSON.stringify(
        {
          clusterId: this.parts.clusterId,
          partitions: this.hosted,
          createdAtMs: Date.now(),
          applied,
          stores,
        },
        null,
        2,
      ) + '\n',
    );
    return { dir, applied };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.refreshTimer);
    clearInterval(this.flushTimer);
    await this.discovering;
    await this.rebuilding?.catch(() => undefined);
    this.drops.stop();
    await this.drops.settled();
    // A snapshot under way reads the stores this closes.
    await this.snapshotting?.catch(() => undefined);
    await this.stopFetchers();
    this.waiters.cancelAll(unavailable('stopping', 'the serve-node is stopping'));
    await this.current.close();
  }

  private async replaceStores(reason: string): Promise<void> {
    // A snapshot under way reads the stores this would close.
    await this.snapshotting?.catch(() => undefined);
    this.parts.logger.warn({ reason }, 'wiping the stores and replaying the log');
    await this.stopFetchers();
    if (this.stopped) return;
    const old = { replica: this.current, generation: this.generation };
    this.current = this.openNextGeneration(reason);
    this.current.docs.setClusterId(this.parts.clusterId);
    // Before the new stores' first commit, so read threads hear of it after they moved to them.
    this.readThreads?.changed();
    await this.forgetDroppedTopics();
    this.startFetchers(true);
    await old.replica.close({ discard: true });
    removeGeneration(this.parts.dataDir, old.generation);
  }

  /**
   * Stops following topics the log no longer holds, so the replay does not wait on them, and
   * records in the new stores the incarnation of each collection they replay. When the log
   * cannot say, all are kept (a collection of a later incarnation is then dropped and replayed
   * once more at a later look).
   */
  private async forgetDroppedTopics(): Promise<void> {
    try {
      const live = new Map(
        (await this.parts.log.topics()).map(({ name, incarnation }) => [name, incarnation ?? 0]),
      );
      for (const topic of this.topics) {
        const incarnation = live.get(topic);
        if (incarnation === undefined) this.topics.delete(topic);
        else if (isCollectionTopic(topic)) this.current.docs.setIncarnation(topic, incarnation);
      }
    } catch (error) {
      this.parts.logger.warn({ err: error }, 'listing the log topics failed; following all');
    }
  }

  /** Empty stores in the next generation, recording why the node replays the log into them. */
  private openNextGeneration(reason: string): Replica {
    this.generation += 1;
    this.lastRebuild = { reason, atMs: Date.now() };
    const dir = createGeneration(this.parts.dataDir, this.generation);
    return new Replica(dir, this.searchOptions(), this.fences);
  }

  private searchOptions(): SearchStoreOptions {
    return searchStoreOptions(this.parts.limits);
  }

  /**
   * One fetcher per log-node: the hosted partitions it stores, and partition 0 for the internal
   * topics when it stores those, whether or not this node hosts partition 0.
   */
  private startFetchers(rebuilding: boolean): void {
    const { log, limits, logger } = this.parts;
    const read = [...new Set([0, ...this.hosted])].sort((a, b) => a - b);
    this.fetchers = log.fetchGroups(read).map(
      (partitions) =>
        new LogFetcher({
          partitions,
          log,
          replica: () => this.current,
          logReadBytesMax: limits.logReadBytesMax,
          logReadBytesMin: limits.logReadBytesMin,
          applySliceMsMax: limits.applySliceMsMax,
          applySliceRecordsMax: limits.applySliceRecordsMax,
          applySliceRecordsMin: limits.applySliceRecordsMin,
          applySliceBytesMin: limits.applySliceBytesMin,
          applySliceBytesMax: limits.applySliceBytesMax,
          logWaitMs: limits.logWaitMs,
          applyLingerMs: limits.applyLingerMs,
          applyLingerIdleMs: limits.applyLingerIdleMs,
          retryMsMax: limits.retryMsMax,
          logger,
          rebuilding,
          applyPaused: () => this.snapshotting?.catch(() => undefined) ?? null,
          readsWaiting: (partitions) =>
            this.waiters.waitingOn(partitions) ||
            (this.readThreads?.waitingOn(partitions) ?? false),
          onApplied: (moved) => {
            this.readThreads?.applied(moved);
            this.waiters.notify(moved);
            this.background?.kick();
          },
          onOutOfRange: (topic, p, detail) => {
            void this.rebuild(`${topic}/${p}: ${detail}`).catch((error: unknown) => {
              logger.error({ err: error }, 'rebuild failed');
            });
          },
        }),
    );
    for (const topic of this.topics) {
      for (const fetcher of this.fetchers) fetcher.tail(topic, this.partitionsOf(topic));
    }
    this.background = new BackgroundSteps({
      replica: () => this.current,
      stepDocsMax: limits.reindexStepDocsMax,
      stepMsMax: limits.reindexStepMsMax,
      retryMsMax: limits.retryMsMax,
      merges: this.mergePolicy,
      paused: () => this.snapshotting?.catch(() => undefined) ?? null,
      onSwapped: () => {
        const moved = [{ topic: SETTINGS_TOPIC, partition: 0 }];
        this.readThreads?.applied(moved);
        this.waiters.notify(moved);
      },
      logger,
    });
    // A re-index a restart interrupted goes on from its last step.
    this.background.kick();
  }

  private async stopFetchers(): Promise<void> {
    await Promise.all([...this.fetchers.map((fetcher) => fetcher.stop()), this.background?.stop()]);
  }
}
