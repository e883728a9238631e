/**
 * Runs a processor (view-task.ts) for every version of a view the views topic declares: the one
 * reads see and, while a redefinition is rebuilt, the new one beside it. Each has its state in a
 * directory of its own named by the view and its version (`<name>@<version>`), so a view dropped
 * and declared again starts from empty. Once a rebuild's published frontiers reach the source's
 * end offsets as of its declaration, the host appends the swap record (view-catalog.ts): one
 * record, so every reader of the views topic goes from the old version to the new at one offset.
 * Then the old version's processor stops, its state and topic go. A swap is decided and appended
 * under the lock the routes take to append definitions (exclusive()), so no drop or redefinition
 * comes between the catalog it read and its record. It follows the views topic every
 * `definitionPollMs`, and at once when asked (settle(): a drop waits for its processor to stop
 * before the view's topic goes). Which tasks run here is the placement's (view-placement.ts):
 * all of them in `tailbase start`, this member's share of the views group on a cluster's
 * serve-node. A task resumes from the state its directory holds (views/README.md, State when a
 * task moves), which stays while its version is declared, even while it runs elsewhere.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { encodeBatch } from '../shared/batch-codec.js';
import { notFound } from '../shared/errors.js';
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { VIEWS_TOPIC } from '../shared/topics.js';
import { taskKey, type ViewProcessing, type ViewProgress } from '../shared/view-api.js';
import {
  type CatalogView,
  type DeclaredView,
  type SwapRecord,
  type ViewRebuild,
  topicOf,
  ViewCatalog,
} from '../shared/view-catalog.js';
import { standalonePlacement, type ViewPlacement } from './view-placement.js';
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
  /**
   * Whether every serve-node has applied a topic through the given offsets (partition → last
   * offset): a rebuild is swapped in once its output is served. Absent: swapped once produced.
   */
  servedThrough?: (topic: string, offsets: ReadonlyMap<number, number>) => Promise<boolean>;
  /** Which tasks run here; absent: every one (`tailbase start`). */
  placement?: ViewPlacement;
  /**
   * Called after every reconcile, failed or not (the definition poll's too): tasks may have
   * started or stopped, and a task whose rounds fail publishes nothing that would tell its lag.
   */
  reconciled?: () => void;
}

const DEFINITION_POLL_MS_DEFAULT = 250;
const VIEWS_PARTITION = 0;
const DEFINITION_READ_BYTES_MAX_DEFAULT = 1024 * 1024;

export class ViewHost implements ViewProcessing {
  /** By `<name>@<version>`: the serving version's task, and a rebuild's beside it. */
  private readonly tasks = new Map<string, ViewTask>();
  /** Rebuilds whose swap record is being appended, by task key. */
  private readonly swapping = new Set<string>();
  /** Rebuilds swapped in (or no longer to swap): their later rounds ask nothing more. */
  private readonly settled = new Set<string>();
  /** Definition writes and swap decisions, one at a time (exclusive()). */
  private writing: Promise<unknown> = Promise.resolve();
  /** Retired topics this host deleted (or found gone): not looked for again. */
  private readonly deleted = new Set<string>();
  private readonly catalog: ViewCatalog;
  private readonly limits: ViewTaskLimits;
  private readonly placement: ViewPlacement;
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
    this.placement = options.placement ?? standalonePlacement;
  }

  static async start(options: ViewHostOptions): Promise<ViewHost> {
    mkdirSync(options.dataDir, { recursive: true });
    const host = new ViewHost(options, (await options.log.cluster()).partitions);
    // A log that fails this first read (a log-node restarting just after the connection) must not
    // end the process: the failure is logged, and the definition poll reads again.
    await host.settle().catch(() => undefined);
    host.placement.start(() => host.settle());
    host.schedule();
    return host;
  }

  progress(view: string, version: number): ViewProgress | null {
    return this.tasks.get(taskKey(view, version))?.progress() ?? null;
  }

  /** The progress of every task running here, by task key. */
  tasksProgress(): Map<string, ViewProgress> {
    return new Map([...this.tasks].map(([key, task]) => [key, task.progress()]));
  }

  /** A running task's progress by task key; null when none runs here under it. */
  taskProgress(key: string): ViewProgress | null {
    return this.tasks.get(key)?.progress() ?? null;
  }

  waitFor(
    view: string,
    version: number,
    sourceOffsets: ReadonlyMap<number, number>,
    waitMs: number,
  ): Promise<Map<number, number>> {
    const task = this.tasks.get(taskKey(view, version));
    if (task === undefined) {
      return Promise.reject(notFound('view_not_found', `no processor runs view ${view}`, { view }));
    }
    return task.waiters.wait(sourceOffsets, waitMs);
  }

  exclusive<T>(append: () => Promise<T>): Promise<T> {
    const run = this.writing.then(append, append);
    this.writing = run.catch(() => undefined);
    return run;
  }

  /** Brings the running processors in line with the definitions acknowledged before the call. */
  settle(): Promise<void> {
    return this.inTurn(
      () => this.reconcile().finally(() => this.options.reconciled?.()),
      {},
      'reading view definitions failed',
    );
  }

  /**
   * Runs `work` after every reconcile and deposed task's stop asked before it; its failure is
   * logged (`what`, `context`) and stops none of those asked after it.
   */
  private inTurn(work: () => Promise<void>, context: object, what: string): Promise<void> {
    const next = this.reconciling.then(work);
    this.reconciling = next.catch((error: unknown) => {
      this.options.logger.warn({ err: error, ...context }, what);
    });
    return next;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    await this.placement.stop();
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
    const wanted = declaredTasks(views);
    const declaredKeys = new Set(wanted.keys());
    // State of views dropped while no processor ran here, or of versions retired: gone. The
    // state of a task run elsewhere now stays, so being dealt it again resumes from it.
    const held = new Set<string>();
    for (const entry of readdirSync(this.options.dataDir)) {
      if (declaredKeys.has(entry)) held.add(entry);
      else if (!this.tasks.has(entry)) {
        rmSync(path.join(this.options.dataDir, entry), { recursive: true, force: true });
      }
    }
    this.placement.declared([...declaredKeys], [...held]);
    for (const key of declaredKeys) if (!this.placement.owns(key)) wanted.delete(key);
    for (const [key, task] of this.tasks) {
      if (!wanted.has(key)) await this.retire(key, task, declaredKeys.has(key));
    }
    for (const [key, { name, declared, rebuild }] of wanted) {
      if (this.tasks.has(key)) continue;
      const dir = path.join(this.options.dataDir, key);
      const { takeover } = this.placement;
      const task: ViewTask = new ViewTask(
        {
          ...declared,
          sourceTopic: topicOf(views, declared.view.from),
          sourceIsView: views.has(declared.view.from),
          takeover,
        },
        dir,
        this.partitions,
        this.options.log,
        this.options.logger,
        this.limits,
        {
          published: () => {
            this.placement.published(key, () => ({
              topic: task.topic,
              progress: task.progress(),
              ends: task.viewEnds(),
            }));
            if (rebuild) this.swapWhenCaughtUp(name, key, (declared as ViewRebuild).targets);
          },
          deposed: () => this.deposed(key, task),
          declared: () => this.declared(key),
          retired: () => this.retired(key, task),
        },
      );
      this.tasks.set(key, task);
      task.start();
    }
    await this.deleteRetired(views);
  }

  /**
   * A rebuild that reached its targets, and whose output the serve-nodes applied (so a read just
   * after the swap finds the new version whole), becomes the version reads see: one record under
   * the view's key. The catalog holds it only while the rebuild is the last declared one.
   */
  private swapWhenCaughtUp(name: string, key: string, targets: Record<string, number>): void {
    const task = this.tasks.get(key);
    if (this.swapping.has(key) || this.settled.has(key) || this.stopped || task === undefined) {
      return;
    }
    if (!task.reached(targets)) return;
    this.swapping.add(key);
    void this.swap(name, key, task)
      .catch((error: unknown) => {
        this.options.logger.warn({ err: error, view: name }, 'swapping a rebuilt view failed');
        return false;
      })
      .then((swapped) => {
        this.swapping.delete(key);
        if (swapped) this.settled.add(key);
        // Not yet served (or failed): again after a rest, whether or not the source moves.
        else if (this.tasks.get(key) === task) {
          setTimeout(() => this.swapWhenCaughtUp(name, key, targets), this.limits.retryMs);
        }
      });
  }

  /** Answers whether the swap record was appended, or the rebuild is no longer to swap. */
  private async swap(name: string, key: string, task: ViewTask): Promise<boolean> {
    const served = this.options.servedThrough;
    if (served !== undefined && !(await served(task.topic, task.viewEnds()))) return false;
    const swapped = await this.exclusive(async () => {
      const entry = (await this.catalog.current()).get(name);
      const rebuild = entry?.rebuild;
      if (entry === undefined || rebuild == null || taskKey(name, rebuild.version) !== key) {
        return null;
      }
      const record: SwapRecord = {
        definition: rebuild.definition,
        version: rebuild.version,
        topic: rebuild.topic,
        retired: [...entry.retired, entry.topic].filter((topic) => !this.deleted.has(topic)),
      };
      const value = new TextEncoder().encode(JSON.stringify(record));
      await this.options.log.append(
        VIEWS_TOPIC,
        VIEWS_PARTITION,
        encodeBatch([{ key: name, value, timestampMs: Date.now() }]),
      );
      return rebuild;
    });
    if (swapped === null) return true;
    this.options.logger.info({ view: name, version: swapped.version }, 'view rebuilt: swapped');
    await this.settle();
    return true;
  }

  /** Topics of replaced or abandoned versions that the log still holds. */
  private async deleteRetired(views: ReadonlyMap<string, CatalogView>): Promise<void> {
    const live = new Set<string>();
    for (const entry of views.values()) {
      live.add(entry.topic);
      if (entry.rebuild !== null) live.add(entry.rebuild.topic);
    }
    const retired = new Set(
      [...views.values()].flatMap((entry) => entry.retired).filter((t) => !this.deleted.has(t)),
    );
    if (retired.size === 0) return;
    for (const topic of await this.options.log.topics()) {
      if (retired.has(topic.name) && !live.has(topic.name)) {
        await this.options.log.deleteTopic(topic.name);
        this.options.logger.info({ topic: topic.name }, "a replaced view version's topic deleted");
      }
    }
    for (const topic of retired) if (!live.has(topic)) this.deleted.add(topic);
  }

  /**
   * A task that stopped on reading another processor's claim above its own: it leaves the tasks
   * and the placement is told it lost it, so the group deals it again (it would otherwise stay
   * dealt here, run by no one, and the view stall).
   */
  private deposed(key: string, task: ViewTask): void {
    void this.leave(key, task, 'deposed', () => this.placement.lost(key)).catch(() => undefined);
  }

  /** Whether a task's version is declared, as the views topic says now. */
  private async declared(key: string): Promise<boolean> {
    return declaredTasks(await this.catalog.current()).has(key);
  }

  /**
   * A task that stopped because its topic is gone and its version no longer declared (a drop, or
   * a swap that retired it, which this host had not yet read): it leaves the tasks, and the views
   * topic is read again at once, which removes its state and tells the placement.
   */
  private retired(key: string, task: ViewTask): void {
    void this.leave(key, task, 'retired', () => undefined)
      .then(() => this.settle())
      .catch(() => undefined);
  }

  /**
   * A task that stopped by itself leaves the tasks, then `after`. In turn with reconcile(), so a
   * task run here again starts once this one has closed its state.
   */
  private leave(key: string, task: ViewTask, why: string, after: () => void): Promise<void> {
    return this.inTurn(
      async () => {
        if (this.tasks.get(key) !== task) return;
        this.tasks.delete(key);
        await task.stop();
        after();
      },
      { task: key },
      `stopping a ${why} view task failed`,
    );
  }

  /** Stops a task; its state stays while its version is declared (dealt elsewhere, not dropped). */
  private async retire(key: string, task: ViewTask, declared: boolean): Promise<void> {
    this.tasks.delete(key);
    await task.stop();
    if (!declared) rmSync(path.join(this.options.dataDir, key), { recursive: true, force: true });
  }
}

interface DeclaredTask {
  name: string;
  declared: DeclaredView;
  rebuild: boolean;
}

/** The tasks the views topic declares, by task key: each view's version and its rebuild's. */
function declaredTasks(views: ReadonlyMap<string, CatalogView>): Map<string, DeclaredTask> {
  const tasks = new Map<string, DeclaredTask>();
  for (const [name, entry] of views) {
    tasks.set(taskKey(name, entry.version), { name, declared: entry, rebuild: false });
    if (entry.rebuild !== null) {
      tasks.set(taskKey(name, entry.rebuild.version), {
        name,
        declared: entry.rebuild,
        rebuild: true,
      });
    }
  }
  return tasks;
}
