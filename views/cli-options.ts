/** The view processors' limits as flags of `tailbase start` (each with its environment variable). */
import type { Option } from 'commander';
import { integerOption } from '../shared/cli-options.js';
import { VIEW_TASK_LIMITS_DEFAULT, type ViewTaskLimits } from './view-task.js';

const FLAGS: Record<keyof ViewTaskLimits, [flag: string, env: string, help: string]> = {
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
};

export function viewLimitOptions(): Option[] {
  return (Object.keys(FLAGS) as (keyof ViewTaskLimits)[]).map((name) => {
    const [flag, env, help] = FLAGS[name];
    return integerOption(flag, help, env, VIEW_TASK_LIMITS_DEFAULT[name], 1);
  });
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
