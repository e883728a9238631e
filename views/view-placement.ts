/**
 * Where a view's tasks run. `tailbase start`, whose log is in its own process, runs them all
 * (`standalonePlacement`); a cluster's serve-nodes share them as members of one consumer group
 * (`GroupPlacement`): the group's leader deals the tasks out (task-assignment.ts), each member
 * runs those it is dealt, and a member that dies (its session expires) has its tasks dealt to
 * the others. A task a member takes resumes from the state it kept of it, or starts from an empty
 * one (views/README.md, State when a task moves), and its published frontiers go to the gateways as offsets committed for the group
 * (published-frontiers.ts), which only a member of the current generation can commit.
 */
import type { GroupMember, GroupMemberLimits, KafkaLogClient } from '../shared/kafka-log/index.js';
import type { Logger } from '../shared/logger.js';
import type { ViewProgress } from '../shared/view-api.js';
import { publishedCommits } from './published-frontiers.js';
import {
  assignTasks,
  decodeMember,
  decodeTasks,
  encodeMember,
  encodeTasks,
} from './task-assignment.js';

/**
 * The consumer group of every view processor of a cluster, under its topic prefix: tailbases
 * that share one Kafka cluster deal their views among their own processors only.
 */
export function viewsGroupOf(log: KafkaLogClient): string {
  return `${log.config.topicPrefix}__tailbase_views`;
}
const PROTOCOL_TYPE = 'tailbase-views';
const PROTOCOL_NAME = 'round-robin';

/** What a task publishes: its topic, its progress and the view ends that cover it. */
export interface TaskPublication {
  topic: string;
  progress: ViewProgress;
  ends: ReadonlyMap<number, number>;
}

export interface ViewPlacement {
  /**
   * Whether a task run here may have run elsewhere since: it holds its output until caught up
   * with the source as the log held it at its claim.
   */
  readonly takeover: boolean;
  /** Whether this process runs the task now. */
  owns(key: string): boolean;
  /**
   * The task keys the views topic declares, as this process last read it, and those of them
   * whose state this process holds (it resumes from it when dealt the task).
   */
  declared(keys: readonly string[], held: readonly string[]): void;
  /**
   * A task's published round, for readers in other processes; `publication` builds what it
   * publishes, for a placement that sends it (the standalone one reads the task's progress itself).
   */
  published(key: string, publication: () => TaskPublication): void;
  /**
   * A task stopped here because another processor claimed it: no longer run here until it is
   * dealt here again.
   */
  lost(key: string): void;
  /** Begins placing; `changed` is called when what this process owns changes. */
  start(changed: () => Promise<void>): void;
  stop(): Promise<void>;
}

/** Every task here: the process holds the log and is the one place views run. */
export const standalonePlacement: ViewPlacement = {
  takeover: false,
  owns: () => true,
  declared: () => undefined,
  published: () => undefined,
  lost: () => undefined,
  start: () => undefined,
  stop: () => Promise.resolve(),
};

/**
 * Every task here, as `standalonePlacement`, and the key of each task that published a round told
 * to `onPublished`: `tailbase start` runs its processors on a thread of their own, which tells the
 * gateway's thread.
 */
export function standalonePlacementTelling(onPublished: (key: string) => void): ViewPlacement {
  return { ...standalonePlacement, published: (key) => onPublished(key) };
}

export interface GroupPlacementOptions {
  log: KafkaLogClient;
  logger: Logger;
  limits?: Partial<GroupMemberLimits>;
  /** The rest before a publication the coordinator did not take is committed again, ms. */
  retryMs: number;
}

export class GroupPlacement implements ViewPlacement {
  readonly takeover = true;
  private readonly member: GroupMember;
  private owned = new Set<string>();
  /** The task keys this member's last join told the leader of. */
  private told: string | null = null;
  private known: readonly string[] = [];
  private held: readonly string[] = [];
  private changed: () => Promise<void> = () => Promise.resolve();
  /** The latest publication not yet committed, by task key; one commit in flight a task. */
  private readonly pending = new Map<string, TaskPublication>();
  private readonly committing = new Set<string>();
  private stopped = false;

  constructor(private readonly options: GroupPlacementOptions) {
    this.member = options.log.groupMember({
      groupId: viewsGroupOf(options.log),
      protocolType: PROTOCOL_TYPE,
      protocolName: PROTOCOL_NAME,
      limits: options.limits,
      logger: options.logger,
      metadata: () => {
        this.told = encodeTasks(this.known).toString('utf8');
        return encodeMember(this.known, [...this.owned], this.held);
      },
      assign: (members) => {
        const dealt = assignTasks(
          members.map((m) => ({ memberId: m.memberId, ...decodeMember(m.metadata) })),
        );
        options.logger.info(
          { assignment: Object.fromEntries(dealt) },
          'view tasks assigned (this member leads the group)',
        );
        return new Map([...dealt].map(([id, tasks]) => [id, encodeTasks(tasks)]));
      },
      assigned: async (generation, assignment) => {
        this.owned = new Set(decodeTasks(assignment));
        this.forgetUnowned();
        options.logger.info(
          { generation: generation.generationId, tasks: [...this.owned] },
          'view tasks of this member',
        );
        await this.settle();
      },
      revoked: async () => {
        this.owned = new Set();
        this.forgetUnowned();
        await this.settle();
      },
    });
  }

  owns(key: string): boolean {
    return this.owned.has(key);
  }

  declared(keys: readonly string[], held: readonly string[]): void {
    this.known = [...keys].sort();
    this.held = [...held].sort();
    // A view declared or dropped since this member last joined: the leader deals again.
    if (this.told !== null && encodeTasks(this.known).toString('utf8') !== this.told) {
      this.member.rejoin();
    }
  }

  published(key: string, publication: () => TaskPublication): void {
    this.pending.set(key, publication());
    if (!this.committing.has(key)) void this.commit(key);
  }

  /**
   * Not owned until dealt again, and a join at once: the leader then deals the task anew (to a
   * member holding its state first), where the sticky deal would keep it here, run by no one.
   */
  lost(key: string): void {
    this.owned.delete(key);
    this.pending.delete(key);
    this.member.rejoin();
  }

  start(changed: () => Promise<void>): void {
    this.changed = changed;
    this.member.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.member.stop();
  }

  /** Publications of tasks another member runs now: their new owner publishes its own. */
  private forgetUnowned(): void {
    for (const key of this.pending.keys()) if (!this.owned.has(key)) this.pending.delete(key);
  }

  /**
   * Tells the host what it owns now. Its reconcile fails while the log is down (it reads the
   * views topic), and reconciles again within its definition poll: a failure here is logged, so
   * that neither the member's loop nor its round ends on it.
   */
  private async settle(): Promise<void> {
    try {
      await this.changed();
    } catch (error) {
      this.options.logger.warn(
        { err: error },
        'view tasks not yet settled after a change of owner',
      );
    }
  }

  /**
   * Commits a task's latest publication, and again after a rest while the coordinator refuses it
   * (between generations): an idle view publishes once, and its readers must get that one.
   */
  private async commit(key: string): Promise<void> {
    this.committing.add(key);
    try {
      for (;;) {
        const publication = this.pending.get(key);
        if (publication === undefined || this.stopped || !this.owned.has(key)) return;
        this.pending.delete(key);
        try {
          await this.member.commit(
            publication.topic,
            publishedCommits(publication.progress, publication.ends),
          );
        } catch (error) {
          this.options.logger.debug({ err: error, task: key }, 'publishing view frontiers failed');
          if (!this.pending.has(key)) this.pending.set(key, publication);
          await new Promise((resolve) => setTimeout(resolve, this.options.retryMs));
        }
      }
    } finally {
      this.committing.delete(key);
    }
  }
}
