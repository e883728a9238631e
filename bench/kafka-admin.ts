/**
 * What a Kafka bench asks a log-node's listener besides producing, by a kafkajs admin client: the
 * topic created before anything counts its end offsets, and the records it holds.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { Admin } from 'kafkajs';

/** An admin client of the listener for `use`'s length. */
async function withAdmin<T>(broker: string, use: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = new Kafka({
    clientId: 'tailbase-bench-admin',
    brokers: [broker],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

export function createTopic(broker: string, topic: string, partitions: number): Promise<boolean> {
  return withAdmin(broker, (admin) =>
    admin.createTopics({ topics: [{ topic, numPartitions: partitions }] }),
  );
}

/** The topic's records, the sum of its partitions' end offsets, by ListOffsets on the listener. */
export function endOffsets(broker: string, topic: string): Promise<number> {
  return withAdmin(broker, async (admin) =>
    (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0),
  );
}
