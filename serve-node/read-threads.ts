/**
 * The serve-node's side of its read threads (read-node.ts is theirs), over one BroadcastChannel:
 * the apply thread keeps the only writable stores, and each read thread opens its own read
 * handles on the same files. After each commit the apply thread says which topic-partitions it
 * moved; a read thread then moves its LMDB snapshot to the latest commit before it looks at
 * applied offsets again. A read thread reads the applied offsets from its own snapshot, the same
 * one it reads documents from, so it can never serve a token from a snapshot older than it:
 * a message late or lost only makes a read wait longer.
 */
import { BroadcastChannel } from 'node:worker_threads';
import type { TopicPartition } from '../shared/log-api.js';
import type { ServeNodeLimits } from './config.js';
import type { SqliteConnectionMemory } from './search-store.js';
import type { ReadThreadsLink, ServeNode } from './serve-node.js';

/** What the apply thread tells read threads. */
export type ToReadThreads =
  /** The stores to read and the topics tailed: at a read thread's hello, and when they change. */
  | { type: 'state'; dir: string; hosted: number[]; limits: ServeNodeLimits; topics: string[] }
  | { type: 'applied'; moved: TopicPartition[] };

/** What read threads tell the apply thread. */
export type ToApplyThread =
  | { type: 'hello' }
  /** A read named a collection not tailed: the apply thread looks for it in the log. */
  | { type: 'discover'; collection: string }
  /** A read started (1) or ended (-1) waiting for these partitions. */
  | { type: 'waiting'; partitions: number[]; delta: 1 | -1 }
  /** A read thread opened its connection to the search store with these bounds. */
  | { type: 'connection'; thread: number; memory: SqliteConnectionMemory };

/** A name for the channel of one serve-node's threads, unique in the process. */
export function readChannelName(dataDir: string): string {
  return `tailbase-reads:${dataDir}:${process.pid}:${Date.now()}:${Math.random()}`;
}

export class ReadThreadsHub implements ReadThreadsLink {
  private readonly channel: BroadcastChannel;
  /** partition → reads of read threads waiting for it. */
  private readonly waiting = new Map<number, number>();
  private readonly readConnections = new Map<number, SqliteConnectionMemory>();

  constructor(
    name: string,
    private readonly node: ServeNode,
  ) {
    this.channel = new BroadcastChannel(name);
    this.channel.onmessage = (event) => this.received((event as { data: ToApplyThread }).data);
    node.attachReadThreads(this);
  }

  applied(moved: readonly TopicPartition[]): void {
    this.post({ type: 'applied', moved: [...moved] });
  }

  changed(): void {
    this.post({
      type: 'state',
      dir: this.node.storesDir(),
      hosted: [...this.node.hosted],
      limits: this.node.limits,
      topics: this.node.tailedTopics(),
    });
  }

  waitingOn(partitions: readonly number[]): boolean {
    return partitions.some((partition) => (this.waiting.get(partition) ?? 0) > 0);
  }

  connections(): ReadonlyMap<number, SqliteConnectionMemory> {
    return this.readConnections;
  }

  close(): void {
    this.channel.close();
  }

  private received(message: ToApplyThread): void {
    switch (message.type) {
      case 'hello':
        this.changed();
        break;
      case 'discover':
        this.node.tails(message.collection);
        break;
      case 'waiting':
        for (const partition of message.partitions) {
          this.waiting.set(partition, (this.waiting.get(partition) ?? 0) + message.delta);
        }
        if (message.delta > 0) this.node.hurry(message.partitions);
        break;
      case 'connection':
        this.readConnections.set(message.thread, message.memory);
        break;
    }
  }

  private post(message: ToReadThreads): void {
    this.channel.postMessage(message);
  }
}
