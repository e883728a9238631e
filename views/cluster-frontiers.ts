/**
 * What a cluster's gateway knows of the view processors, which run on the serve-nodes
 * (view-placement.ts): their published frontiers, read as the offsets the views group committed
 * (published-frontiers.ts). One OffsetFetch of the group answers every view; it is asked every
 * `pollMs` while a read waits, and every `idlePollMs` otherwise, for GET /v1/views. A read that
 * carries source offsets waits until the committed frontiers pass them, then takes the view ends
 * committed with them. Definitions are appended by the gateway and swaps by the processor that
 * runs the rebuild; nothing here decides a swap, so `exclusive` only runs the append.
 */
import { TailbaseError } from '../shared/errors.js';
import type { KafkaLogClient } from '../shared/kafka-log/index.js';
import type { Logger } from '../shared/logger.js';
import type { ViewProcessing, ViewProgress } from '../shared/view-api.js';
import { type CatalogView, ViewCatalog } from '../shared/view-catalog.js';
import { FrontierWaiters } from './frontier-waiters.js';
import { readPublished } from './published-frontiers.js';
import { viewsGroupOf } from './view-placement.js';

export interface ClusterFrontiersLimits {
  /** How often the committed frontiers are read while a read waits on them, ms. */
  pollMs: number;
  /** How often they are read otherwise (for status), ms. */
  idlePollMs: number;
  /** Reads waiting on one view's frontiers at once. */
  waitersMax: number;
  /** Bytes one read of the views topic asks for. */
  definitionReadBytesMax: number;
}

export const clusterFrontiersDefaults: Readonly<ClusterFrontiersLimits> = Object.freeze({
  pollMs: 50,
  idlePollMs: 1_000,
  waitersMax: 10_000,
  definitionReadBytesMax: 1024 * 1024,
});

export class ClusterFrontiers implements ViewProcessing {
  private readonly limits: ClusterFrontiersLimits;
  private readonly catalog: ViewCatalog;
  private views: ReadonlyMap<string, CatalogView> = new Map();
  /** By the topic of a view's version. */
  private readonly waiters = new Map<string, FrontierWaiters>();
  private readonly progresses = new Map<string, ViewProgress>();
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly log: KafkaLogClient,
    private readonly logger: Logger,
    limits: Partial<ClusterFrontiersLimits> = {},
  ) {
    this.limits = { ...clusterFrontiersDefaults, ...limits };
    this.catalog = new ViewCatalog(log, this.limits.definitionReadBytesMax);
  }

  start(): this {
    this.loop ??= this.run();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.wake?.();
    await this.loop;
    for (const waiters of this.waiters.values()) waiters.closeAll();
  }

  progress(view: string, version: number): ViewProgress | null {
    const topic = this.topicOf(view, version);
    return topic === null ? null : (this.progresses.get(topic) ?? null);
  }

  async waitFor(
    view: string,
    version: number,
    sourceOffsets: ReadonlyMap<number, number>,
    waitMs: number,
  ): Promise<Map<number, number>> {
    if (this.topicOf(view, version) === null) this.views = await this.catalog.current();
    const topic = this.topicOf(view, version);
    if (topic === null) {
      throw new TailbaseError(
        504,
        'not_caught_up',
        `version ${version} of view ${view} is not declared here yet`,
        { view },
      );
    }
    const waiting = this.waitersOf(view, topic).wait(sourceOffsets, waitMs);
    this.wake?.();
    return waiting;
  }

  exclusive<T>(append: () => Promise<T>): Promise<T> {
    return append();
  }

  async settle(): Promise<void> {
    this.views = await this.catalog.current();
  }

  private topicOf(view: string, version: number): string | null {
    const entry = this.views.get(view);
    if (entry?.version === version) return entry.topic;
    if (entry?.rebuild?.version === version) return entry.rebuild.topic;
    return null;
  }

  private waitersOf(view: string, topic: string): FrontierWaiters {
    let waiters = this.waiters.get(topic);
    if (waiters === undefined) {
      waiters = new FrontierWaiters(view, this.limits.waitersMax);
      this.waiters.set(topic, waiters);
    }
    return waiters;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.read();
      } catch (error) {
        this.logger.debug({ err: error }, 'reading the published view frontiers failed');
      }
      const busy = [...this.waiters.values()].some((w) => w.waiting > 0);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, busy ? this.limits.pollMs : this.limits.idlePollMs);
      });
      this.wake = null;
    }
  }

  private async read(): Promise<void> {
    this.views = await this.catalog.current();
    const byTopic = new Map<
      string,
      { partition: number; offset: number; metadata: string | null }[]
    >();
    for (const c of await this.log.committedOffsets(viewsGroupOf(this.log))) {
      let committed = byTopic.get(c.topic);
      if (committed === undefined) byTopic.set(c.topic, (committed = []));
      committed.push(c);
    }
    const live = new Set<string>();
    for (const [name, entry] of this.views) {
      const versions = [{ version: entry.version, topic: entry.topic }];
      if (entry.rebuild !== null) {
        versions.push({ version: entry.rebuild.version, topic: entry.rebuild.topic });
      }
      for (const { version, topic } of versions) {
        live.add(topic);
        const published = readPublished(version, byTopic.get(topic) ?? []);
        if (published === null || published.progress.frontiers.length === 0) continue;
        this.progresses.set(topic, published.progress);
        this.waitersOf(name, topic).publish(
          new Map(published.progress.frontiers.map((f) => [f.partition, f.frontier])),
          published.ends,
        );
      }
    }
    // A dropped view's or retired version's topic: forgotten, but for waits under way (a view
    // declared since this catalog was read may have readers waiting on its topic already).
    for (const topic of this.progresses.keys()) if (!live.has(topic)) this.progresses.delete(topic);
    for (const [topic, waiters] of this.waiters) {
      if (!live.has(topic) && waiters.waiting === 0) this.waiters.delete(topic);
    }
  }
}
