/**
 * A read thread of a serve-node (read-threads.ts tells how it follows the apply thread): it
 * answers key reads, scans and searches from its own read handles, waiting for tokens as the
 * apply thread's reads do, and leaves everything else (applying, status, rebuilds, snapshots) to
 * the apply thread.
 */
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { TailbaseError, unavailable } from '../shared/errors.js';
import type { AppliedOffsets, ServeStatus, SnapshotResult } from '../shared/serve-api.js';
import type { ServeNodeLimits } from './config.js';
import type { LocalServeCore } from './local-serve-client.js';
import { appliedOfNeed, OffsetWaiters } from './offset-waiters.js';
import { ReadReplica } from './read-replica.js';
import type { ToApplyThread, ToReadThreads } from './read-threads.js';

type State = Extract<ToReadThreads, { type: 'state' }>;

export class ReadNode implements LocalServeCore {
  readonly hosted: readonly number[];
  readonly limits: ServeNodeLimits;
  readonly waiters: OffsetWaiters;
  private current: ReadReplica;
  private topics: ReadonlySet<string>;

  private constructor(
    private readonly channel: BroadcastChannel,
    state: State,
    private readonly onError: (error: unknown) => void,
  ) {
    this.hosted = state.hosted;
    this.limits = state.limits;
    this.current = new ReadReplica(state.dir, this.limits);
    this.topics = new Set(state.topics);
    this.waiters = new OffsetWaiters(
      this.limits.waitersMax,
      appliedOfNeed(() => this.current),
      (needs) => {
        const partitions = [...new Set(needs.map((need) => need.partition))];
        this.post({ type: 'waiting', partitions, delta: 1 });
        return () => this.post({ type: 'waiting', partitions, delta: -1 });
      },
    );
    channel.onmessage = (event) =>
      this.received((event as { data: ToReadThreads | ToApplyThread }).data);
    this.reportConnection();
  }

  /** Tells the apply thread the bounds its connection to the search store is under (status). */
  private reportConnection(): void {
    this.post({
      type: 'connection',
      thread: threadId,
      memory: this.current.search.connectionMemory(),
    });
  }

  /**
   * Joins the serve-node's read channel and opens the stores its apply thread names; `onError`
   * hears of stores of a rebuild that could not be opened or closed (reads go on from the ones
   * open).
   */
  static async open(
    channelName: string,
    waitMsMax: number,
    onError: (error: unknown) => void,
  ): Promise<ReadNode> {
    const channel = new BroadcastChannel(channelName);
    try {
      const state = await new Promise<State>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`the apply thread did not answer within ${waitMsMax} ms`)),
          waitMsMax,
        );
        channel.onmessage = (event) => {
          const message = (event as { data: ToReadThreads }).data;
          if (message.type !== 'state') return;
          clearTimeout(timer);
          resolve(message);
        };
        channel.postMessage({ type: 'hello' } satisfies ToApplyThread);
      });
      return new ReadNode(channel, state, onError);
    } catch (error) {
      channel.close();
      throw error;
    }
  }

  replica(): ReadReplica {
    // A commit of the apply thread may have dropped a table this thread's caches still name (a
    // collection's drop, a re-index's swap): they follow it now, not only when its message comes.
    this.current.search.followWriter();
    return this.current;
  }

  applied(collection: string): AppliedOffsets {
    return this.current.appliedOf(collection, this.hosted);
  }

  tails(collection: string): boolean {
    if (this.topics.has(collection)) return true;
    this.post({ type: 'discover', collection });
    return false;
  }

  status(): ServeStatus {
    throw notHere('status');
  }

  ready(): boolean {
    throw notHere('ready');
  }

  rebuild(): Promise<void> {
    throw notHere('rebuild');
  }

  dropCollection(): Promise<void> {
    throw notHere('dropCollection');
  }

  snapshot(): Promise<SnapshotResult> {
    throw notHere('snapshot');
  }

  async stop(): Promise<void> {
    this.channel.close();
    this.waiters.cancelAll(unavailable('stopping', 'the serve-node is stopping'));
    await this.current.close();
  }

  /** Other read threads' messages to the apply thread arrive here too, and are passed over. */
  private received(message: ToReadThreads | ToApplyThread): void {
    if (message.type !== 'state' && message.type !== 'applied') return;
    if (message.type === 'applied') {
      this.current.refresh();
      this.waiters.notify(message.moved);
      return;
    }
    this.topics = new Set(message.topics);
    if (message.dir === this.current.dir) return;
    let next: ReadReplica;
    try {
      next = new ReadReplica(message.dir, this.limits);
    } catch (error) {
      // Replaced again and removed before this thread got to it: the next state names the newer.
      this.onError(error);
      return;
    }
    const old = this.current;
    this.current = next;
    this.reportConnection();
    old.close().catch(this.onError);
  }

  private post(message: ToApplyThread): void {
    this.channel.postMessage(message);
  }
}

/** The read threads' client never sends these: the apply thread answers them. */
function notHere(call: string): TailbaseError {
  return new TailbaseError(500, 'not_a_read_call', `${call} is the apply thread's, not a read's`);
}
