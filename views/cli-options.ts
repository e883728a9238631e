/**
 * The view processors' limits as flags of `tailbase start` and `tailbase serve-node` (each with
 * its environment variable), and the views group's timeouts, flags of `tailbase serve-node`.
 */
import type { Option } from 'commander';
import { integerOption } from '../shared/cli-options.js';
import { groupMemberDefaults, type GroupMemberLimits } from '../shared/kafka-log/index.js';
import { VIEW_TASK_LIMITS_DEFAULT, type ViewTaskLimits } from './view-task.js';

const FLAGS: Flags<ViewTaskLimits> = {
  fetchBytesMax: [
    '--view-fetch-bytes-max <bytes>',
    'TAILBASE_VIEW_FETCH_BYTES_MAX',
    'bytes a view processor fetches of each source partition at once',
  ],
  fetchWaitMs: [
    '--view-fetch-wait-ms <ms>',
    'TAILBASE_VIEW_FETCH_WAIT_MS',
    'how long a view processor waits for new source records before it goes round, ms',
  ],
  appendRecordsMax: [
    '--view-append-records-max <n>',
    'TAILBASE_VIEW_APPEND_RECORDS_MAX',
    "output records a view processor appends to the view's topic at once",
  ],
  retryMs: [
    '--view-retry-ms <ms>',
    'TAILBASE_VIEW_RETRY_MS',
    'how long a view processor rests after the log failed it, ms',
  ],
  waitersMax: [
    '--view-waiters-max <n>',
    'TAILBASE_VIEW_WAITERS_MAX',
    "reads waiting on one view's frontiers at once",
  ],
  claimCheckStallsMax: [
    '--view-claim-check-stalls-max <n>',
    'TAILBASE_VIEW_CLAIM_CHECK_STALLS_MAX',
    "reads of its own topic in a row that bring a view processor's claim check nothing (each after the first waits up to the fetch wait) before the round fails and is retried",
  ],
};

type Flags<T> = Record<keyof T, [flag: string, env: string, help: string]>;

/** One integer option a limit, each at least 1, defaulting to `defaults`. */
function limitOptions<T extends object>(flags: Flags<T>, defaults: Readonly<T>): Option[] {
  return (Object.keys(flags) as (keyof T & string)[]).map((name) => {
    const [flag, env, help] = flags[name];
    return integerOption(flag, help, env, defaults[name] as number, 1);
  });
}

/** The task limits' flags, with `defaults` in place of the usual ones where given. */
export function viewLimitOptions(defaults: Partial<ViewTaskLimits> = {}): Option[] {
  return limitOptions(FLAGS, { ...VIEW_TASK_LIMITS_DEFAULT, ...defaults });
}

/** The limits from parsed flags (commander's camelCase names: `viewFetchBytesMax`, ...). */
export function viewLimitValues(flags: Record<string, unknown>): ViewTaskLimits {
  const limits = { ...VIEW_TASK_LIMITS_DEFAULT };
  for (const name of Object.keys(FLAGS) as (keyof ViewTaskLimits)[]) {
    const value = flags[`view${name[0].toUpperCase()}${name.slice(1)}`];
    if (typeof value === 'number') limits[name] = value;
  }
  return limits;
}

const GROUP_FLAGS: Flags<GroupMemberLimits> = {
  sessionTimeoutMs: [
    '--view-session-timeout-ms <ms>',
    'TAILBASE_VIEW_SESSION_TIMEOUT_MS',
    "how long the views group keeps a processor that stopped heartbeating before its views move, ms (within the coordinator's bounds: 6000 at least on a log-node)",
  ],
  rebalanceTimeoutMs: [
    '--view-rebalance-timeout-ms <ms>',
    'TAILBASE_VIEW_REBALANCE_TIMEOUT_MS',
    'how long a rebalance of the views group waits for every processor to join again, ms',
  ],
  heartbeatIntervalMs: [
    '--view-heartbeat-ms <ms>',
    'TAILBASE_VIEW_HEARTBEAT_MS',
    'how often a view processor heartbeats to the views group, ms (at most a third of the session timeout)',
  ],
  retryMs: [
    '--view-group-retry-ms <ms>',
    'TAILBASE_VIEW_GROUP_RETRY_MS',
    "how long a view processor rests after the group's coordinator failed it, ms",
  ],
};

export function viewGroupOptions(): Option[] {
  return limitOptions(GROUP_FLAGS, groupMemberDefaults);
}

/** The views group's limits from parsed flags. */
export function viewGroupValues(flags: Record<string, unknown>): GroupMemberLimits {
  return {
    sessionTimeoutMs: flags.viewSessionTimeoutMs as number,
    rebalanceTimeoutMs: flags.viewRebalanceTimeoutMs as number,
    heartbeatIntervalMs: flags.viewHeartbeatMs as number,
    retryMs: flags.viewGroupRetryMs as number,
  };
}
