/** Partition lists as operators write them: `0-3,6` is partitions 0, 1, 2, 3 and 6. */
import { InvalidArgumentError } from 'commander';

export const PARTITION_LIST_ITEMS_MAX = 4096;

export function parsePartitionList(raw: string): number[] {
  const partitions = new Set<number>();
  for (const part of raw.split(',').map((item) => item.trim())) {
    const match = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!match) throw new InvalidArgumentError(`"${part}" is not a partition or a range like 0-3`);
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (last < first) throw new InvalidArgumentError(`range ${part} runs backwards`);
    if (last - first + partitions.size >= PARTITION_LIST_ITEMS_MAX) {
      throw new InvalidArgumentError(`more than ${PARTITION_LIST_ITEMS_MAX} partitions listed`);
    }
    for (let p = first; p <= last; p++) partitions.add(p);
  }
  return [...partitions].sort((a, b) => a - b);
}
