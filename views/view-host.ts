/**
 * Runs a processor (view-task.ts) for every version of a view the views topic declares: the one
 * reads see and, while a redefinition is rebuilt, the new one beside it. Each has its state in a
 * directory of its own named by the view and its version (`<name>@<version>`), so a view dropped
 * and declared again starts from empty. Once a rebuild's published frontiers reach the source's
 * end offsets as of its declaration, the host appends the swap record (view-catalog.ts): one
 * record, so every reader of the views topic goes from the old version to the new at one offset.
 * Then the old version's processor stops, its state and topic go. It follows the views topic
 * every `definitionPollMs`, and at once when asked (settle(): a drop waits for its processor to
 * stop before the view's topic goes). This slice runs every view in one place: beside the log-node
 * in `tailbase start`.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { encodeBatch } from '../shared/batch-codec.js';
import { notFound } from '../shared/errors.js';
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { VIEWS_TOPIC } from '../shared/topics.js';
import type { ViewProcessing, ViewProgress } from '../shared/view-api.js';
import {
  type CatalogView,
  type DeclaredView,
  type SwapRecord,
  topicOf,
  ViewCatalog,
} from '../shared/view-catalog.js';
import { VIEW_TASK_LIMITS_DEFAULT, ViewTask, type ViewTaskLimits } from './view-task.js';

export interface ViewHostOptions {
  log: LogClient;
  /** Where the views' state directories live. */
  dataDir: string;
  logger: Logger;
  limits?: Partial<ViewTaskLimits>;
  /** How often the views topic is read for new or dropped definitions, ms. */
  definitionPollMs?: number;
  /** Bytes one read of the views topic asks for. */
  definitionReadBytesMax?: number;
}

const DEFINITION_POLL_MS_DEFAULT = 250;
const VIEWS_PARTITION = 0;
const DEFINITION_READ_BYTES_MAX_DEFAULT = 1024 * 1024;

export class ViewHost implements ViewProcessing {
  /** By `<name>@<version>`: the serving version's task, and a rebuild's beside it. */
  private readonly tasks = new Map<string, ViewTask>();
  /** Rebuilds whose swap record is being appended, by task key. */
  private readonly swapping = new Set<string>();
  private readonly catalog: ViewCatalog;
  private readonly limits: ViewTaskLimits;
  private reconciling: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  private constructor(
    private readonly options: ViewHostOptions,
    private readonly partitions: number,
  ) {
    this.catalog = new ViewCatalog(
      options.log,
      options.definitionReadBytesMax ?? DEFINITION_READ_BYTES_MAX_DEFAULT,
    );
    this.limits = { ...VIEW_TASK_LIMITS_DEFAULT, ...options.limits };
  }

  static async start(options: ViewHostOptions): Promise<ViewHost> {
    mkdirSync(options.dataDir, { recursive: true });
    const host = new ViewHost(options, (await options.log.cluster()).partitions);
    await host.settle();
    host.schedule();
    return host;
  }

  progress(view: string, version: number): ViewProgress | null {
    return this.tasks.get(dirName(view, version))?.progress() ?? null;
  }

  waitFor(
    view: string,
    version: number,
    sourceOffsets: ReadonlyMap<number, number>,
    waitMs: number,
  ): Promise<Map<number, number>> {
    const task = this.tasks.get(dirName(view, version));
    if (task === undefined) {
      return Promise.reject(notFound('view_not_found', `no processor runs view ${view}`, { view }));
    }
    return task.waiters.wait(sourceOffsets, waitMs);
  }

  /** Brings the running processors in line with the definitions acknowledged before the call. */
  settle(): Promise<void> {
    const next = this.reconciling.then(() => this.reconcile());
    // One failed read must not stop the ones after it.
    this.reconciling = next.catch((error: unknown) => {
      this.options.logger.warn({ err: error }, 'reading view definitions failed');
    });
    return next;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.reconciling;
    await Promise.all([...this.tasks.values()].map((task) => task.stop()));
    this.tasks.clear();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.settle()
        .catch(() => undefined)
        .finally(() => this.schedule());
    }, this.options.definitionPollMs ?? DEFINITION_POLL_MS_DEFAULT);
  }

  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    const views = await this.catalog.current();
    const wanted = new Map<string, { name: string; declared: DeclaredView; rebuild: boolean }>();
    for (const [name, entry] of views) {
      wanted.set(dirName(name, entry.version), { name, declared: entry, rebuild: false });
      if (entry.rebuild !== null) {
        wanted.set(dirName(name, entry.rebuild.version), {
          name,
          declared: entry.rebuild,
          rebuild: true,
        });
      }
    }
    for (const [key, task] of this.tasks) {
      if (!wanted.has(key)) await this.retire(key, task);
    }
    for (const [key, { name, declared, rebuild }] of wanted) {
      if (this.tasks.has(key)) continue;
      const task = new ViewTask(
        { ...declared, sourceTopic: topicOf(views, declared.view.from) },
        path.join(this.options.dataDir, key),
        this.partitions,
        this.options.log,
        this.options.logger,
        this.limits,
        rebuild ? () => this.swapWhenCaughtUp(name, key) : undefined,
      );
      this.tasks.set(key, task);
      task.start();
    }
    // State of views dropped while no processor ran.
    for (const entry of readdirSync(this.options.dataDir)) {
      if (!wanted.has(entry))
        rmSync(path.join(this.options.dataDir, entry), { recursive: true, force: true });
    }
    await this.deleteRetired(views);
  }

  /**
   * A rebuild that reached its targets becomes the version reads see: one record under the view's
   * key, which holds only if the rebuild is still the one declared when it is read.
   */
  private swapWhenCaughtUp(name: string, key: string): void {
    if (this.swapping.has(key) || this.stopped) return;
    const task = this.tasks.get(key);
    void this.catalog
      .current()
      .then(async (views) => {
        const entry = views.get(name);
        const rebuild = entry?.rebuild;
        if (entry === undefined || task === undefined || rebuild === null || rebuild === undefined)
          return;
        if (dirName(name, rebuild.version) !== key || !task.reached(rebuild.targets)) return;
        if (this.swapping.has(key)) return;
        this.swapping.add(key);
        try {
          const record: SwapRecord = {
            definition: rebuild.definition,
            version: rebuild.version,
            topic: rebuild.topic,
            retired: [...entry.retired, entry.topic],
          };
          const value = new TextEncoder().encode(JSON.stringify(record));
          await this.options.log.append(
            VIEWS_TOPIC,
            VIEWS_PARTITION,
            encodeBatch([{ key: name, value, timestampMs: Date.now() }]),
          );
          this.options.logger.info(
            { view: name, version: rebuild.version },
            'view rebuilt: swapped',
          );
          await this.settle();
        } finally {
          this.swapping.delete(key);
        }
      })
      .catch((error: unknown) => {
        this.options.logger.warn({ err: error, view: name }, 'swapping a rebuilt view failed');
      });
  }

  /** Topics of replaced or abandoned versions that the log still holds. */
  private async deleteRetired(views: ReadonlyMap<string, CatalogView>): Promise<void> {
    const live = new Set<string>();
    for (const entry of views.values()) {
      live.add(entry.topic);
      if (entry.rebuild !== null) live.add(entry.rebuild.topic);
    }
    const retired = new Set([...views.values()].flatMap((entry) => entry.retired));
    if (retired.size === 0) return;
    for (const topic of await this.options.log.topics()) {
      if (retired.has(topic.name) && !live.has(topic.name)) {
        await this.options.log.deleteTopic(topic.name);
        this.options.logger.info({ topic: topic.name }, "a replaced view version's topic deleted");
      }
    }
  }

  private async retire(key: string, task: ViewTask): Promise<void> {
    this.tasks.delete(key);
    await task.stop();
    rmSync(path.join(this.options.dataDir, key), { recursive: true, force: true });
  }
}

function dirName(view: string, version: number): string {
  return `${view}@${version}`;
}
