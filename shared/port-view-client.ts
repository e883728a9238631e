/**
 * The view processors' contract (view-api.ts) across threads (port-rpc.ts): `tailbase start`
 * runs its view processors on a thread of their own, so their fetches, decoding and LMDB writes
 * do not take the HTTP edge's thread, and the gateway reaches them here. Two ports: on one the
 * gateway's side calls the processors (a wait for read-your-writes, a settle, the exclusive
 * section of definition writes); on the other the processors' side calls the gateway's (whether
 * the serve-node applied a topic, and their progress after every round and settle, kept here
 * so `progress()` answers at once as the contract asks).
 */
import type { MessagePort } from 'node:worker_threads';
import { answered, answerPort, PortCaller } from './port-rpc.js';
import { taskKey, type ViewProcessing, type ViewProgress } from './view-api.js';

/** What the processors' thread asks of the gateway's. */
export interface ViewThreadHost {
  /** Whether every serve-node applied `topic` through the offsets (partition → last offset). */
  servedThrough(topic: string, offsets: ReadonlyMap<number, number>): Promise<boolean>;
}

/** The gateway's side. */
export class PortViewClient implements ViewProcessing {
  private readonly caller: PortCaller;
  /** Each running task's progress as its thread last told it. */
  private tasks = new Map<string, ViewProgress>();

  constructor(
    calls: MessagePort,
    told: MessagePort,
    host: ViewThreadHost,
    onBug: (error: unknown) => void,
  ) {
    this.caller = new PortCaller(calls);
    answerPort(
      told,
      {
        servedThrough: ([topic, offsets]) =>
          answered(host.servedThrough(topic as string, offsets as Map<number, number>)),
        progress: ([tasks]) => {
          this.tasks = tasks as Map<string, ViewProgress>;
          return Promise.resolve({ value: null });
        },
      },
      onBug,
    );
  }

  progress(view: string, version: number): ViewProgress | null {
    return this.tasks.get(taskKey(view, version)) ?? null;
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
    this.tasks = await this.caller.call<Map<string, ViewProgress>>('settle', []);
  }

  /** Every call still out fails with `error` (the processors' thread is gone). */
  close(error: Error): void {
    this.caller.failAll(error);
  }
}

/** What the processors' thread serves: the contract, and every running task's progress. */
export interface ThreadViewProcessing extends ViewProcessing {
  tasksProgress(): Map<string, ViewProgress>;
}

/**
 * The processors' side: answers the gateway's calls on `calls`, and returns what tells the
 * gateway's side of the processors' progress and asks it whether a topic is served.
 */
export function answerViewPort(
  calls: MessagePort,
  told: MessagePort,
  processing: () => ThreadViewProcessing,
  onBug: (error: unknown) => void,
): ViewThreadHost & { tell(): void } {
  const caller = new PortCaller(told);
  const tell = () => {
    void caller.call('progress', [processing().tasksProgress()]).catch(onBug);
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
        return { value: processing().tasksProgress() };
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
    tell,
    servedThrough: (topic, offsets) => caller.call('servedThrough', [topic, offsets]),
  };
}
