/**
 * The gateway's side of the view thread keeps each task's progress as the newest snapshot told it:
 * a tell that lands after a newer settle answer (another port, so another order) changes nothing,
 * a task gone since is not brought back, and the rounds published in one tick cross as one
 * message holding only the tasks that published.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import {
  answerViewPort,
  PortViewClient,
  type ProgressSnapshot,
  type ThreadViewProcessing,
} from '../../shared/port-view-client.js';
import type { ViewProgress } from '../../shared/view-api.js';

function progressAt(frontier: number): ViewProgress {
  return {
    version: 1,
    frontiers: [{ partition: 0, frontier, lag: 0, processed: frontier }],
    refusedRecords: 0,
    lateRecords: 0,
  };
}

/** The processors' tasks by key, each at a frontier the test moves. */
class Tasks implements ThreadViewProcessing {
  readonly frontiers = new Map<string, number>();
  progress(): ViewProgress | null {
    return null;
  }
  tasksProgress(): Map<string, ViewProgress> {
    return new Map([...this.frontiers].map(([key, f]) => [key, progressAt(f)]));
  }
  taskProgress(key: string): ViewProgress | null {
    const frontier = this.frontiers.get(key);
    return frontier === undefined ? null : progressAt(frontier);
  }
  waitFor(): Promise<Map<number, number>> {
    return Promise.resolve(new Map());
  }
  exclusive<T>(append: () => Promise<T>): Promise<T> {
    return append();
  }
  settle(): Promise<void> {
    return Promise.resolve();
  }
}

const opened: MessagePort[] = [];
afterEach(() => {
  for (const port of opened.splice(0)) port.close();
});

function channel(): MessageChannel {
  const made = new MessageChannel();
  opened.push(made.port1, made.port2);
  return made;
}

const onBug = (error: unknown) => {
  throw error;
};
const host = { servedThrough: () => Promise.resolve(true) };

/** Resolves once `port` received `count` messages more. */
function received(port: MessagePort, count: number): Promise<ProgressSnapshot[]> {
  const messages: ProgressSnapshot[] = [];
  return new Promise((resolve) => {
    const take = (message: ProgressSnapshot) => {
      messages.push(message);
      if (messages.length < count) return;
      port.off('message', take);
      resolve(messages);
    };
    port.on('message', take);
  });
}

describe('PortViewClient progress', () => {
  it('takes nothing older than the snapshot it holds', async () => {
    const calls = channel();
    const told = channel();
    const progress = channel();
    const client = new PortViewClient(calls.port1, told.port1, progress.port1, host, onBug);
    const tasks = new Tasks();
    const sent = channel();
    const gateway = answerViewPort(calls.port2, told.port2, sent.port2, () => tasks, onBug);
    // Tells sent before the settle, delivered after its answer: the view was created since.
    tasks.frontiers.set('old@1', 5);
    const before = received(sent.port1, 2);
    gateway.tellAll();
    gateway.published('old@1');
    const stale = await before;
    tasks.frontiers.delete('old@1');
    tasks.frontiers.set('made@1', 0);
    await client.settle();
    expect(client.progress('made', 1)).toEqual(progressAt(0));
    const delivered = received(progress.port1, 2);
    for (const message of stale) progress.port2.postMessage(message);
    await delivered;
    expect(client.progress('made', 1)).toEqual(progressAt(0));
    expect(client.progress('old', 1)).toBeNull();
  });

  it('tells the rounds of one tick as one message, only the tasks that published', async () => {
    const progress = channel();
    const tasks = new Tasks();
    for (let i = 0; i < 50; i++) tasks.frontiers.set(`v${i}@1`, i);
    const gateway = answerViewPort(
      channel().port2,
      channel().port2,
      progress.port2,
      () => tasks,
      onBug,
    );
    const delivered = received(progress.port1, 1);
    for (let round = 0; round < 20; round++) gateway.published('v3@1');
    gateway.published('v7@1');
    const [message] = await delivered;
    expect(message.full).toBe(false);
    expect(message.tasks).toEqual([
      ['v3@1', progressAt(3)],
      ['v7@1', progressAt(7)],
    ]);
    // Nothing more was sent for those rounds.
    const next = received(progress.port1, 1);
    gateway.tellAll();
    expect((await next)[0]).toMatchObject({ seq: message.seq + 1, full: true });
  });

  it('merges a tell of some tasks into what it holds of the others', async () => {
    const calls = channel();
    const progress = channel();
    const client = new PortViewClient(calls.port1, channel().port1, progress.port1, host, onBug);
    const tasks = new Tasks();
    tasks.frontiers.set('a@1', 1);
    tasks.frontiers.set('b@1', 1);
    const gateway = answerViewPort(
      calls.port2,
      channel().port2,
      progress.port2,
      () => tasks,
      onBug,
    );
    await client.settle();
    const delivered = received(progress.port1, 1);
    tasks.frontiers.set('b@1', 9);
    gateway.published('b@1');
    await delivered;
    expect(client.progress('a', 1)).toEqual(progressAt(1));
    expect(client.progress('b', 1)).toEqual(progressAt(9));
  });
});
