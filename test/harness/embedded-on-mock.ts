/**
 * `tailbase start --log kafka://<librdkafka's mock cluster> --allow-unverified-topics` (the mock
 * has no DescribeConfigs or CreateTopics to verify with), the collections' topics and the
 * settings topic created first with replication factor 3: the setup of the tests that run
 * tailbase on a Kafka implementation nobody here wrote.
 */
import { spawnEmbedded, type SpawnedEmbedded } from './embedded.js';
import { startMockCluster, type MockCluster } from './kafka-mock.js';

const BROKERS = 3;
const REPLICATION_FACTOR = 3;

export interface EmbeddedOnMock {
  mock: MockCluster;
  embedded: SpawnedEmbedded;
  /** Stops tailbase, then the mock cluster. */
  stop(): Promise<void>;
}

/** `topics`: each collection topic to create, with its partition count. */
export async function embeddedOnMock(topics: Record<string, number>): Promise<EmbeddedOnMock> {
  const mock = await startMockCluster(BROKERS);
  try {
    for (const [name, partitions] of Object.entries(topics)) {
      await mock.command(`topic ${name} ${partitions} ${REPLICATION_FACTOR}`);
    }
    await mock.command(`topic __tailbase_settings 1 ${REPLICATION_FACTOR}`);
    const embedded = await spawnEmbedded({
      args: ['--log', `kafka://${mock.bootstrap}`, '--allow-unverified-topics'],
    });
    return {
      mock,
      embedded,
      async stop() {
        await embedded.stop();
        await mock.stop();
      },
    };
  } catch (error) {
    await mock.stop();
    throw error;
  }
}
