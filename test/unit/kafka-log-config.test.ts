import { describe, expect, it } from 'vitest';
import { kafkaLogConfig } from '../../shared/kafka-log/config.js';

describe("the Kafka log client's limits", () => {
  it('keeps produce requests in flight within what an idempotent producer may have', () => {
    expect(kafkaLogConfig({ bootstrap: ['h:1'] }).produceRequestsInFlightMax).toBe(4);
    expect(
      kafkaLogConfig({ bootstrap: ['h:1'], produceRequestsInFlightMax: 5 })
        .produceRequestsInFlightMax,
    ).toBe(5);
    expect(() => kafkaLogConfig({ bootstrap: ['h:1'], produceRequestsInFlightMax: 6 })).toThrow(
      /produceRequestsInFlightMax must be at most 5/,
    );
    expect(() => kafkaLogConfig({ bootstrap: ['h:1'], produceRequestsInFlightMax: 0 })).toThrow(
      /positive integer/,
    );
  });
});
