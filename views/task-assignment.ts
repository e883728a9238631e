/**
 * How a cluster's view tasks (one per live version of a view, `<name>@<version>`) are spread over
 * the members of the views group, as Kafka Streams spreads its tasks: the leader takes every task
 * any member knows of and deals them, sorted, over the sorted member ids, each to the member with
 * the fewest so far. Sticky as Streams' assignor is: a task stays with the member that runs it
 * while that member holds no more than its share (the task count over the member count, rounded
 * up), so declaring a view does not move the others, each of which a new owner would rebuild. The
 * same metadata always gives the same assignment. A task no member runs goes first to a member
 * that holds its state (one restarted, or dealt it before), which resumes instead of rebuilding,
 * as Streams prefers a client whose state is caught up. A member's metadata is the task keys it
 * knows (its reading of the views topic), those it runs and those whose state it holds; its
 * assignment, the keys it is to run.
 */
import { Buffer } from 'node:buffer';

export interface MemberTasks {
  memberId: string;
  /** The task keys the member knows of. */
  tasks: readonly string[];
  /** The task keys it runs now. */
  owned: readonly string[];
  /** The task keys whose state it holds (from an earlier run): it would resume, not rebuild. */
  held?: readonly string[];
}

/** member id → the task keys it is to run. */
export function assignTasks(members: readonly MemberTasks[]): Map<string, string[]> {
  const ids = [...new Set(members.map((m) => m.memberId))].sort();
  const tasks = [...new Set(members.flatMap((m) => m.tasks))].sort();
  const assignment = new Map<string, string[]>(ids.map((id) => [id, []]));
  const share = Math.ceil(tasks.length / Math.max(1, ids.length));
  const owners = new Map<string, string>();
  for (const member of [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : 1))) {
    for (const task of member.owned) if (!owners.has(task)) owners.set(task, member.memberId);
  }
  const heldBy = new Map(members.map((m) => [m.memberId, new Set(m.held ?? [])]));
  const dealt = new Set<string>();
  for (const task of tasks) {
    const owner = owners.get(task);
    const held = owner === undefined ? undefined : assignment.get(owner);
    if (held !== undefined && held.length < share) {
      held.push(task);
      dealt.add(task);
    }
  }
  // A task no member runs within its share goes to a member that kept its state, if one has
  // room: it resumes where a member without the state would replay the source from its start.
  for (const task of tasks) {
    if (dealt.has(task)) continue;
    const holder = ids.find(
      (id) => heldBy.get(id)?.has(task) === true && assignment.get(id)!.length < share,
    );
    if (holder === undefined) continue;
    assignment.get(holder)!.push(task);
    dealt.add(task);
  }
  for (const task of tasks) {
    if (dealt.has(task)) continue;
    const fewest = ids.reduce((a, b) =>
      assignment.get(b)!.length < assignment.get(a)!.length ? b : a,
    );
    assignment.get(fewest)!.push(task);
  }
  for (const held of assignment.values()) held.sort();
  return assignment;
}

/** A member's metadata: the tasks it knows, those it runs and those whose state it holds (JSON). */
export function encodeMember(
  tasks: readonly string[],
  owned: readonly string[],
  held: readonly string[] = [],
): Buffer {
  return Buffer.from(
    JSON.stringify({ tasks: [...tasks].sort(), owned: [...owned].sort(), held: [...held].sort() }),
    'utf8',
  );
}

/** A member's metadata read back; anything else (another protocol's) knows and runs nothing. */
export function decodeMember(bytes: Uint8Array): {
  tasks: string[];
  owned: string[];
  held: string[];
} {
  const value = parseJson(bytes);
  const record =
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  return {
    tasks: stringsOf(record.tasks),
    owned: stringsOf(record.owned),
    held: stringsOf(record.held),
  };
}

/** An assignment's task keys as bytes (JSON). */
export function encodeTasks(tasks: readonly string[]): Buffer {
  return Buffer.from(JSON.stringify([...tasks].sort()), 'utf8');
}

/** An assignment's task keys; anything else is none. */
export function decodeTasks(bytes: Uint8Array): string[] {
  return stringsOf(parseJson(bytes));
}

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return null;
  }
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
}
