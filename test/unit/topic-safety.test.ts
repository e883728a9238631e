// A Kafka topic's settings against invariant 1: replication factor, min.insync.replicas and
// unclean leader election each refused below the rules, naming the topic, setting and value;
// a config the cluster does not report is not held against it.
import { describe, expect, it } from 'vitest';
import { topicSafetyDefaults, unsafeTopic } from '../../shared/kafka-log/topic-safety.js';

const facts = (replicationFactor: number, configs: [string, string][] | null) => ({
  topic: 'tb-orders',
  replicationFactor,
  configs: configs === null ? null : new Map(configs),
});

describe('topic safety', () => {
  it('refuses each unsafe setting with the topic, the setting and its value', () => {
    expect(unsafeTopic(facts(1, null), topicSafetyDefaults)?.details).toEqual({
      topic: 'tb-orders',
      setting: 'replication.factor',
      value: '1',
    });
    const minIsr = unsafeTopic(facts(3, [['min.insync.replicas', '1']]), topicSafetyDefaults);
    expect(minIsr?.code).toBe('topic_misconfigured');
    expect(minIsr?.message).toContain('topic tb-orders has min.insync.replicas 1');
    const unclean = unsafeTopic(
      facts(3, [
        ['min.insync.replicas', '2'],
        ['unclean.leader.election.enable', 'true'],
      ]),
      topicSafetyDefaults,
    );
    expect(unclean?.details).toMatchObject({
      setting: 'unclean.leader.election.enable',
      value: 'true',
    });
  });

  it('takes a safe topic, and one whose cluster does not report a config', () => {
    const safe = facts(3, [
      ['min.insync.replicas', '2'],
      ['unclean.leader.election.enable', 'false'],
    ]);
    expect(unsafeTopic(safe, topicSafetyDefaults)).toBeNull();
    expect(unsafeTopic(facts(3, []), topicSafetyDefaults)).toBeNull();
    expect(unsafeTopic(facts(1, null), { replicationFactor: 1, minInsyncReplicas: 1 })).toBeNull();
  });
});
