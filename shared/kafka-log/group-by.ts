/** Grouping helpers of the client's requests: by broker, by topic. */

export function groupByTopic(
  partitions: { topic: string; partition: number }[],
): Map<string, number[]> {
  const grouped = new Map<string, number[]>();
  for (const { topic, partition } of partitions) pushTo(grouped, topic, partition);
  return grouped;
}

/** Adds the value to the key's list in place (copying the list each time is quadratic). */
export function pushTo<K, V>(lists: Map<K, V[]>, key: K, value: V): void {
  const list = lists.get(key);
  if (list === undefined) lists.set(key, [value]);
  else list.push(value);
}
