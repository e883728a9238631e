/**
 * Runs a processor (view-task.ts) for every view the views topic declares, each with its state in
 * a directory of its own named by the view and its definition's version (`<name>@<version>`), so
 * a view dropped and declared again starts from empty. It follows the views topic every
 * `definitionPollMs`, and at once when asked (settle(): a drop waits for its processor to stop
 * before the view's topic goes). This slice runs every view in one place: beside the log-node in
 * `tailbase start`.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { notFound } from '../shared/errors.js';
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import type { ViewProcessing, ViewProgress } from '../shared/view-api.js';
import { ViewCatalog } from '../shared/view-catalog.js';
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
const DEFINITION_READ_BYTES_MAX_DEFAULT = 1024 * 1024;

export class ViewHost implements ViewProcessing {
  private readonly tasks = new Map<string, ViewTask>();
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

  progress(view: string): ViewProgress | null {
    return this.tasks.get(view)?.progress() ?? null;
  }

  waitFor(
    view: string,
    sourceOffsets: ReadonlyMap<number, number>,
    waitMs: number,
  ): Promise<Map<number, number>> {
    const task = this.tasks.get(view);
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
    const live = new Set<string>();
    for (const [name, declared] of views) {
      const dir = dirName(name, declared.version);
      live.add(dir);
      const running = this.tasks.get(name);
      if (running?.version === declared.version) continue;
      if (running !== undefined) await this.retire(name, running);
      const task = new ViewTask(
        declared.view,
        declared.version,
        path.join(this.options.dataDir, dir),
        this.partitions,
        this.options.log,
        this.options.logger,
        this.limits,
      );
      this.tasks.set(name, task);
      task.start();
    }
    for (const [name, task] of this.tasks) {
      if (!views.has(name)) await this.retire(name, task);
    }
    // State of views dropped while no processor ran.
    for (const entry of readdirSync(this.options.dataDir)) {
      if (!live.has(entry))
        rmSync(path.join(this.options.dataDir, entry), { recursive: true, force: true });
    }
  }

  private async retire(name: string, task: ViewTask): Promise<void> {
    this.tasks.delete(name);
    await task.stop();
    rmSync(path.join(this.options.dataDir, dirName(name, task.version)), {
      recursive: true,
      force: true,
    });
  }
}

function dirName(view: string, version: number): string {
  return `${view}@${version}`;
}
