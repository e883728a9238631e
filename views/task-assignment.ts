/**
 * How a cluster's view tasks (one per live version of a view, `<name>@<version>`) are spread over
 * the members of the views group, as Kafka Streams spreads its tasks: the leader takes every task
 * any member knows of, sorts them and the member ids, and deals the tasks round-robin. The same
 * members and tasks always give the same assignment. A member's metadata is the task keys it
 * knows (its reading of the views topic); its assignment, the keys it runs.
 */
import { Buffer } from 'node:buffer';

export interface MemberTasks {
  memberId: string;
  /** The task keys the member knows of. */
  tasks: readonly string[];
}

/** Task keys dealt round-robin, both sorted: member id → the keys it runs. */
export function assignTasks(members: readonly MemberTasks[]): Map<string, string[]> {
  const ids = [...new Set(members.map((m) => m.memberId))].sort();
  const tasks = [...new Set(members.flatMap((m) => m.tasks))].sort();
  const assignment = new Map<string, string[]>(ids.map((id) => [id, []]));
  tasks.forEach((task, i) => assignment.get(ids[i % ids.length])!.push(task));
  return assignment;
}

/** Task keys as the bytes of a member's metadata or assignment (JSON). */
export function encodeTasks(tasks: readonly string[]): Buffer {
  return Buffer.from(JSON.stringify([...tasks].sort()), 'utf8');
}

/** A member's metadata or assignment as task keys; anything else (another protocol's) is none. */
export function decodeTasks(bytes: Uint8Array): string[] {
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes).toString('utf8'));
    return Array.isArray(value) ? value.filter((t): t is string => typeof t === 'string') : [];
  } catch {
    return [];
  }
}
