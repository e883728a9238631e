// Topic prefixes: a prefixed internal topic is known by its name's end, a collection may not end
// so, and a prefix is refused unless Kafka could name a topic with it.
import { describe, expect, it } from 'vitest';
import { checkCollection } from '../../shared/collection-name.js';
import { checkTopicPrefix, kafkaLogConfig } from '../../shared/kafka-log/config.js';
import {
  internalTopicOf,
  isCollectionTopic,
  isSettingsTopic,
  SETTINGS_TOPIC,
} from '../../shared/topics.js';

describe('topic prefixes', () => {
  it('knows an internal topic after any Kafka-legal prefix, and a collection name as none', () => {
    expect(internalTopicOf(SETTINGS_TOPIC)).toBe(SETTINGS_TOPIC);
    expect(internalTopicOf('tb-__tailbase_settings')).toBe(SETTINGS_TOPIC);
    expect(internalTopicOf('Team.A_1-__consumer_offsets')).toBe('__consumer_offsets');
    expect(internalTopicOf('tb/__tailbase_settings')).toBeNull();
    expect(internalTopicOf('orders')).toBeNull();
    expect(isSettingsTopic('tb-__consumer_offsets')).toBe(false);
    expect(isCollectionTopic('tb-__tailbase_settings')).toBe(false);
    expect(isCollectionTopic('tb-orders')).toBe(true);
  });

  it("refuses a collection whose name ends with an internal topic's", () => {
    expect(checkCollection('a__b')).toBe('a__b');
    expect(() => checkCollection('x__tailbase_settings')).toThrow(/internal topic/);
  });

  it('takes a prefix of Kafka topic characters, short enough for every collection', () => {
    expect(kafkaLogConfig({ bootstrap: ['h:1'] }).topicPrefix).toBe('');
    expect(kafkaLogConfig({ bootstrap: ['h:1'], topicPrefix: 'team.a-' }).topicPrefix).toBe(
      'team.a-',
    );
    expect(() => checkTopicPrefix('a b')).toThrow(/topic prefix/);
    expect(() => checkTopicPrefix('x'.repeat(186))).toThrow(/at most 185/);
  });
});
