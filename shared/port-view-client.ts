/**
 * The view processors' contract (view-api.ts) across threads (port-rpc.ts): `tailbase start`
 * runs its view processors on a thread of their own, so their fetches, decoding and LMDB writes
 * do not take the HTTP edge's thread, and the gateway reaches them here. Three ports: on `calls`
 * the gateway's side calls the processors (a wait for read-your-writes, a settle, the exclusive
 * section of definition writes); on `told` the processors' side asks the gateway's whether the
 * serve-node applied a topic; on `progress` it tells, one way, the progress of the tasks that
 * published a round (coalesced to one message a tick) and of every task after each reconcile,
 * kept here so `progress()` answers at once as the contract asks.
 *
 * Node orders messages within a port, not across ports: a settle's answer (on `calls`) can land
 * before a tell sent earlier (on `progress`). Every snapshot carries a number the processors'
 * side increases, and this side takes nothing older than what it holds.
 */
import type { MessagePort } from 'node:worker_threads';
import { answered, answerPort, PortCaller } from './port-rpc.js';
import { taskKey, type ViewProcessing, type ViewProgress } from './view-api.js';

/**
 * Progress told across: `full`, every running task (one not listed runs no more); else only the
 * tasks listed, which published a round since the last tell.
 */
export interface ProgressSnapshot {
  seq: number;
  full: boolean;
  tasks: [key: string, progress: ViewProgress][];
}

/** What the processors' thread asks of the gateway's. */
export interface ViewThreadHost {
  /** Whether every serve-node applied `topic` through the offsets (partition → last offset). */
  servedThrough(topic: string, offsets: ReadonlyMap<number, number>): Promise<boolean>;
}

/** The gateway's side. */
export class PortViewClient implements ViewProcessing {
  private readonly caller: PortCaller;
  /** Each running task's progress as its thread last told it, with the snapshot that told it. */
  private readonly tasks = new Map<string, { seq: number; progress: ViewProgress }>();
  /** The newest full snapshot taken: a tell older than it is already covered by it. */
  private fullSeq = 0;

  constructor(
    calls: MessagePort,
    told: MessagePort,
    progress: MessagePort,
    host: ViewThreadHost,
    onBug: (error: unknown) => void,
  ) {
    this.caller = new PortCaller(calls);
    answerPort(
      told,
      {
        servedThrough: ([topic, offsets]) =>
          answered(host.servedThrough(topic as string, offsets as Map<number, number>)),
      },
      onBug,
    );
    progress.on('message', (snapshot: ProgressSnapshot) => this.take(snapshot));
  }

  progress(view: string, version: number): ViewProgress | null {
    return this.tasks.get(taskKey(view, version))?.progress ?? null;
  }

  waitFor(
    view: string,
    version: number,
    sourceOffsets: ReadonlyMap<number, number>,
    waitMs: number,
  ): Promise<Map<number, number>> {
    return this.caller.call('waitFor', [view, version, sourceOffsets, waitMs]);
  }

  async exclusive<T>(append: () => Promise<T>): Promise<T> {
    const lock = await this.caller.call<number>('lock', []);
    try {
      return await append();
    } finally {
      await this.caller.call('unlock', [lock]);
    }
  }

  /** Answers once the processors took the definitions, with their progress after it. */
  async settle(): Promise<void> {
    this.take(await this.caller.call<ProgressSnapshot>('settle', []));
  }

  /** Every call still out fails with `error` (the processors' thread is gone). */
  close(error: Error): void {
    this.caller.failAll(error);
  }

  private take(snapshot: ProgressSnapshot): void {
    const { seq, full, tasks } = snapshot;
    if (seq <= this.fullSeq) return;
    if (full) {
      this.fullSeq = seq;
      const running = new Set(tasks.map(([key]) => key));
      for (const [key, held] of this.tasks) {
        if (!running.has(key) && held.seq < seq) this.tasks.delete(key);
      }
    }
    for (const [key, progress] of tasks) {
      if ((this.tasks.get(key)?.seq ?? 0) < seq) this.tasks.set(key, { seq, progress });
    }
  }
}

/** What the processors' thread serves: the contract, and its running tasks' progress. */
export interface ThreadViewProcessing extends ViewProcessing {
  tasksProgress(): Map<string, ViewProgress>;
  /** A running task's progress by task key; null when it runs no more. */
  taskProgress(key: string): ViewProgress | null;
}

/** What the processors' thread holds of the gateway's side. */
export interface ViewThreadGateway extends ViewThreadHost {
  /** A task published a round: its progress is told within the tick, one message for all. */
  published(key: string): void;
  /** Tells every running task's progress (after a reconcile: tasks started or stopped). */
  tellAll(): void;
}

/**
 * The processors' side: answers the gateway's calls on `calls`, asks it on `told` whether a
 * topic is served, and tells it the processors' progress on `progress`.
 */
export function answerViewPort(
  calls: MessagePort,
  told: MessagePort,
  progress: MessagePort,
  processing: () => ThreadViewProcessing,
  onBug: (error: unknown) => void,
): ViewThreadGateway {
  const caller = new PortCaller(told);
  let seq = 0;
  const dirty = new Set<string>();
  const full = (): ProgressSnapshot => {
    // Tasks that published before this are in it: their pending tell would add nothing.
    dirty.clear();
    return { seq: ++seq, full: true, tasks: [...processing().tasksProgress()] };
  };
  let scheduled = false;
  const tellPublished = () => {
    scheduled = false;
    if (dirty.size === 0) return;
    const tasks: ProgressSnapshot['tasks'] = [];
    for (const key of dirty) {
      const task = processing().taskProgress(key);
      if (task !== null) tasks.push([key, task]);
    }
    dirty.clear();
    progress.postMessage({ seq: ++seq, full: false, tasks } satisfies ProgressSnapshot);
  };
  /** Exclusive sections the gateway holds, by lock id: each releases its section. */
  const held = new Map<number, () => void>();
  let nextLock = 1;
  answerPort(
    calls,
    {
      waitFor: ([view, version, offsets, waitMs]) =>
        answered(
          processing().waitFor(
            view as string,
            version as number,
            offsets as Map<number, number>,
            waitMs as number,
          ),
        ),
      settle: async () => {
        await processing().settle();
        return { value: full() };
      },
      lock: () =>
        new Promise((locked) => {
          void processing().exclusive(
            () =>
              new Promise<void>((release) => {
                const lock = nextLock++;
                held.set(lock, release);
                locked({ value: lock });
              }),
          );
        }),
      unlock: ([lock]) => {
        held.get(lock as number)?.();
        held.delete(lock as number);
        return Promise.resolve({ value: null });
      },
    },
    onBug,
  );
  return {
    published: (key) => {
      dirty.add(key);
      if (scheduled) return;
      scheduled = true;
      setImmediate(tellPublished);
    },
    tellAll: () => progress.postMessage(full()),
    servedThrough: (topic, offsets) => caller.call('servedThrough', [topic, offsets]),
  };
}
