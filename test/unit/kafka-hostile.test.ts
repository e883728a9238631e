/**
 * Frames nobody honest sends: each must fail as a KafkaDecodeError saying what and where (or come
 * back as the distinct unsupported outcome), at once, never as a RangeError, an allocation sized
 * by the attacker, or a hang. Plus byte vectors derived by hand from the protocol guide, and the
 * frame splitter's size check and chunk handling.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ApiKey,
  ErrorCode,
  KafkaDecodeError,
  KafkaFrameSplitter,
  REQUEST_ELEMENTS_MAX,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  supportedVersions,
  unsupportedVersionResponse,
} from '../../shared/kafka/index.js';

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ''), 'hex');

/** A request header v1: api key, version, correlation id 1, client id "c". */
const header1 = (apiKey: string, version: string) => `${apiKey} ${version} 00000001 0001 63`;
/** A request header v2: the same and an empty tagged-fields section. */
const header2 = (apiKey: string, version: string) => `${header1(apiKey, version)} 00`;

function decodeError(frame: Buffer): KafkaDecodeError {
  try {
    decodeRequest(frame);
  } catch (error) {
    if (error instanceof KafkaDecodeError) return error;
    throw error;
  }
  throw new Error('decoded');
}

describe('hand-derived frames decode', () => {
  it('ApiVersions v0: header v1, empty body', () => {
    expect(decodeRequest(hex('0012 0000 00000001 0002 6162'))).toEqual({
      kind: 'request',
      apiKey: 18,
      apiVersion: 0,
      correlationId: 1,
      clientId: 'ab',
      body: { clientSoftwareName: '', clientSoftwareVersion: '' },
    });
  });

  it('ApiVersions v3: header v2, compact strings, tagged-fields sections', () => {
    const frame = hex(`${header2('0012', '0003')} 03 6b63 02 31 00`);
    expect(decodeRequest(frame)).toMatchObject({
      apiVersion: 3,
      clientId: 'c',
      body: { clientSoftwareName: 'kc', clientSoftwareVersion: '1' },
    });
  });

  it('a null client id (length −1)', () => {
    expect(decodeRequest(hex('0012 0000 00000009 ffff'))).toMatchObject({ clientId: null });
  });

  it('Metadata v1 and v9 with null topics (all topics)', () => {
    expect(decodeRequest(hex(`${header1('0003', '0001')} ffffffff`))).toMatchObject({
      body: { topics: null, allowAutoTopicCreation: true },
    });
    expect(decodeRequest(hex(`${header2('0003', '0009')} 00 00 00 01 00`))).toMatchObject({
      body: { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: true },
    });
  });

  it('Produce v3 records as a view of the frame, and null records', () => {
    const frame = hex(
      `${header1('0000', '0003')} ffff ffff 00000064 00000001 0001 74 00000002` +
        `00000000 00000003 010203 00000001 ffffffff`,
    );
    const request = decodeRequest(frame);
    if (request.kind !== 'request' || request.apiKey !== ApiKey.Produce) throw new Error('no');
    expect(request.body).toMatchObject({ transactionalId: null, acks: -1, timeoutMs: 100 });
    const [first, second] = request.body.topicData[0].partitionData;
    expect(first.records).toEqual(hex('010203'));
    expect(first.records!.buffer).toBe(frame.buffer);
    expect(second).toEqual({ index: 1, records: null });
  });

  it('a tagged field of a version skips unknown tags and reads known ones', () => {
    // Heartbeat v4 response: header v1 (tagged fields), throttle, error, then two unknown tags.
    const frame = hex('00000005 00 00000000 0000 02 07 02 abcd 09 00');
    expect(decodeResponse(ApiKey.Heartbeat, 4, frame)).toEqual({
      correlationId: 5,
      body: { throttleTimeMs: 0, errorCode: 0 },
    });
    // ApiVersions v3 response (header v0): ZkMigrationReady is tag 3, one byte.
    const apiVersions = hex('00000005 0000 01 00000000 01 03 01 01');
    expect(decodeResponse(ApiKey.ApiVersions, 3, apiVersions).body).toMatchObject({
      apiKeys: [],
      zkMigrationReady: true,
      finalizedFeaturesEpoch: -1n,
    });
  });
});

describe('unsupported requests', () => {
  it('an unknown API key is its own outcome, with the header read', () => {
    expect(decodeRequest(hex(`${header1('7fff', '0000')} 0102`))).toEqual({
      kind: 'unknown-api',
      apiKey: 0x7fff,
      apiVersion: 0,
      correlationId: 1,
      clientId: 'c',
    });
  });

  it('a version out of range is its own outcome; only ApiVersions gets an answer', () => {
    const produce = decodeRequest(hex(`${header1('0000', '0063')} 0102`));
    expect(produce).toMatchObject({ kind: 'unsupported-version', apiKey: 0, apiVersion: 99 });
    expect(unsupportedVersionResponse(produce as never)).toBeNull();

    // A future ApiVersions v9 with a flexible header: the client id still reads (never compact).
    const request = decodeRequest(hex(`${header2('0012', '0009')} 03 6b63 02 31 00`));
    expect(request).toMatchObject({ kind: 'unsupported-version', apiVersion: 9, correlationId: 1 });
    const answer = unsupportedVersionResponse(request as never)!;
    // v0 answer, response header v0: size, correlation id, error 35, int32 count, 6 bytes each.
    const ranges = supportedVersions();
    expect(answer.readInt32BE(0)).toBe(answer.length - 4);
    expect(answer.subarray(4, 14)).toEqual(
      hex(`00000001 0023 ${ranges.length.toString(16).padStart(8, '0')}`),
    );
    expect(answer.length).toBe(14 + 6 * ranges.length);
    expect(decodeResponse(ApiKey.ApiVersions, 0, answer.subarray(4)).body).toEqual({
      errorCode: ErrorCode.UNSUPPORTED_VERSION,
      apiKeys: ranges,
      throttleTimeMs: 0,
      supportedFeatures: [],
      finalizedFeaturesEpoch: -1n,
      finalizedFeatures: [],
      zkMigrationReady: false,
    });
  });
});

const HOSTILE: [string, string, string][] = [
  ['an empty frame', '', 'truncated'],
  ['a header cut in its api version', '0012 00', 'truncated'],
  ['a header cut before its client id', '0012 0000 00000001', 'truncated'],
  ['a client id longer than the frame', '0012 0000 00000001 7fff 6162', 'length'],
  ['a client id of invalid UTF-8', '0012 0000 00000001 0002 fffe', 'utf8'],
  ['a client id length below −1', '0012 0000 00000001 fffe', 'length'],
  ['bytes after the body', '0012 0000 00000001 0001 63 00', 'trailing bytes'],
  ['an array count of 2^31 − 1', `${header1('0003', '0001')} 7fffffff 0001 74`, 'length'],
  ['an array count below −1', `${header1('0003', '0001')} fffffffe`, 'length'],
  ['a compact array count of 2^32 − 2', `${header2('0003', '0009')} ffffffff0f 00 00 00`, 'length'],
  ['a varint of 6 bytes', `${header2('0003', '0009')} ffffffffff01`, 'varint'],
  ['a varint over 32 bits in 5 bytes', `${header2('0003', '0009')} ffffffff1f`, 'varint'],
  ['a varint cut short', `${header2('0003', '0009')} ff`, 'truncated'],
  ['a compact null where none is allowed', `${header2('0012', '0003')} 00 02 31 00`, 'length'],
  ['a compact string past the end', `${header2('0012', '0003')} 7f 6b63`, 'length'],
  ['a huge tagged-field count', `${header1('0012', '0003')} ffffffff0f`, 'length'],
  ['a tagged field larger than the frame', `${header1('0012', '0003')} 01 00 7f 00`, 'truncated'],
  [
    'records longer than the frame',
    `${header1('0000', '0003')} ffff ffff 00000064 00000001 0001 74 00000001 00000000 7fffffff 01`,
    'length',
  ],
  [
    'records of length −2',
    `${header1('0000', '0003')} ffff ffff 00000064 00000001 0001 74 00000001 00000000 fffffffe`,
    'length',
  ],
];

describe('hostile frames fail as KafkaDecodeError', () => {
  for (const [what, bytes, expected] of HOSTILE) {
    it(what, () => {
      const error = decodeError(hex(bytes));
      expect(error.what).toBe(expected);
      expect(error.message).toMatch(/at byte \d+/);
    });
  }

  it('a tagged field whose value is shorter than its declared size', () => {
    const frame = encodeRequest(ApiKey.Fetch, 12, 3, 'c', { clusterId: 'ab' }).subarray(4);
    // The body ends with its tagged fields: count 1, tag 0, size 3, then "ab" as a compact string.
    expect(frame.subarray(-6)).toEqual(hex('01 00 03 03 6162'));
    const padded = Buffer.concat([frame.subarray(0, -4), hex('04 03 6162 00')]);
    expect(decodeError(padded)).toMatchObject({ what: 'length', field: 'clusterId' });
  });

  it('any byte string either decodes or fails as a KafkaDecodeError', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 64 }),
        fc.constantFrom(...supportedVersions()),
        (tail, range) => {
          const head = Buffer.alloc(4);
          head.writeInt16BE(range.apiKey, 0);
          head.writeInt16BE(range.maxVersion, 2);
          try {
            decodeRequest(Buffer.concat([head, tail]));
          } catch (error) {
            expect(error).toBeInstanceOf(KafkaDecodeError);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('every truncation of a valid frame fails as a KafkaDecodeError', () => {
    const frame = encodeRequest(ApiKey.Fetch, 12, 3, 'consumer', {
      maxWaitMs: 500,
      topics: [
        {
          topic: 'orders',
          partitions: [{ partition: 0, fetchOffset: 10n, partitionMaxBytes: 1 << 20 }],
        },
      ],
      rackId: 'r1',
    }).subarray(4);
    for (let length = 0; length < frame.length; length++) {
      expect(() => decodeRequest(frame.subarray(0, length))).toThrow(KafkaDecodeError);
    }
  });
});

/** A Metadata v9 request (flexible: a topic entry is 2 bytes) naming `count` empty topics. */
function metadataV9(count: number): Buffer {
  const head = hex(header2('0003', '0009'));
  const countBytes: number[] = [];
  for (let rest = count + 1; ; rest = Math.floor(rest / 128)) {
    if (rest < 0x80) {
      countBytes.push(rest);
      break;
    }
    countBytes.push((rest & 0x7f) | 0x80);
  }
  // Each topic: a compact string of length 0 (01) and an empty tagged-fields section (00).
  const topics = Buffer.alloc(count * 2);
  for (let i = 0; i < topics.length; i += 2) topics[i] = 0x01;
  // After the topics: allowAutoTopicCreation, includeClusterAuthorizedOperations,
  // includeTopicAuthorizedOperations, the tagged fields.
  return Buffer.concat([head, Buffer.from(countBytes), topics, hex('01 00 00 00')]);
}

describe('the decoded-element budget (REQUEST_ELEMENTS_MAX)', () => {
  it('is a named default of 100,000 array elements a request', () => {
    expect(REQUEST_ELEMENTS_MAX).toBe(100_000);
  });

  it('a Metadata v9 request of 1,000,000 topics in a 2 MB frame fails fast', () => {
    const frame = metadataV9(1_000_000);
    expect(frame.length).toBeLessThan(2.1e6);
    const started = performance.now();
    const error = decodeError(frame);
    const elapsedMs = performance.now() - started;
    expect(error).toMatchObject({ what: 'elements', field: 'topics' });
    expect(error.message).toContain('REQUEST_ELEMENTS_MAX');
    expect(error.message).toContain('100000');
    // Checked on the count, before the array is allocated or any element decoded.
    expect(error.at).toBe(hex(header2('0003', '0009')).length);
    expect(elapsedMs).toBeLessThan(50);
  });

  it('a request of exactly REQUEST_ELEMENTS_MAX elements round-trips; one more fails', () => {
    const topics = Array.from({ length: REQUEST_ELEMENTS_MAX }, (_, i) => ({ name: `t${i}` }));
    const frame = encodeRequest(ApiKey.Metadata, 9, 7, 'c', { topics }).subarray(4);
    const request = decodeRequest(frame);
    if (request.kind !== 'request' || request.apiKey !== ApiKey.Metadata) throw new Error('no');
    expect(request.body.topics).toHaveLength(REQUEST_ELEMENTS_MAX);
    expect(request.body.topics![REQUEST_ELEMENTS_MAX - 1]).toEqual({
      name: `t${REQUEST_ELEMENTS_MAX - 1}`,
    });
    expect(decodeError(metadataV9(REQUEST_ELEMENTS_MAX + 1))).toMatchObject({ what: 'elements' });
  });

  it('counts the elements of every array in the body, nested ones too, per decode call', () => {
    // 2 topics of 3 partitions each: 2 + 6 = 8 elements.
    const partitions = [0, 1, 2].map((index) => ({ index, records: null }));
    const frame = encodeRequest(ApiKey.Produce, 9, 1, 'c', {
      acks: -1,
      timeoutMs: 100,
      topicData: [
        { name: 'a', partitionData: partitions },
        { name: 'b', partitionData: partitions },
      ],
    }).subarray(4);
    expect(decodeRequest(frame, { elementsMax: 8 })).toMatchObject({ kind: 'request' });
    let error: unknown;
    try {
      decodeRequest(frame, { elementsMax: 7 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(KafkaDecodeError);
    expect(error).toMatchObject({ what: 'elements', field: 'topicData[].partitionData' });
    expect((error as Error).message).toContain('elementsMax (7)');
    // The budget is per call: the same frame decodes again under the default.
    expect(decodeRequest(frame)).toMatchObject({ kind: 'request' });
  });
});

describe('KafkaFrameSplitter', () => {
  const sized = (body: Buffer) => {
    const size = Buffer.alloc(4);
    size.writeInt32BE(body.length, 0);
    return Buffer.concat([size, body]);
  };

  it('refuses a 2 GiB size as soon as its 4 bytes are in', () => {
    const splitter = new KafkaFrameSplitter();
    expect(() => splitter.push(hex('7fffffff'))).toThrow(
      expect.objectContaining({ what: 'frame size', at: 0 }),
    );
  });

  it('refuses negative sizes and sizes over its frameBytesMax', () => {
    expect(() => new KafkaFrameSplitter().push(hex('ffffffff'))).toThrow(KafkaDecodeError);
    const small = new KafkaFrameSplitter(10);
    expect(small.push(sized(Buffer.alloc(10)))).toHaveLength(1);
    expect(() => small.push(sized(Buffer.alloc(11)))).toThrow(/frameBytesMax/);
  });

  it('hands out frames within one chunk as views of it, zero-length ones too', () => {
    const chunk = Buffer.concat([sized(hex('0102')), sized(Buffer.alloc(0)), sized(hex('03'))]);
    const frames = new KafkaFrameSplitter().push(chunk);
    expect(frames).toEqual([hex('0102'), Buffer.alloc(0), hex('03')]);
    expect(frames[0].buffer).toBe(chunk.buffer);
  });

  it('reassembles frames however the stream is cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }),
        fc.array(fc.integer({ min: 1, max: 17 }), { minLength: 1 }),
        (bodies, cuts) => {
          const stream = Buffer.concat(bodies.map((body) => sized(Buffer.from(body))));
          const splitter = new KafkaFrameSplitter();
          const frames: Buffer[] = [];
          for (let at = 0, i = 0; at < stream.length; i++) {
            const next = Math.min(stream.length, at + cuts[i % cuts.length]);
            frames.push(...splitter.push(stream.subarray(at, next)));
            at = next;
          }
          expect(frames).toEqual(bodies.map((body) => Buffer.from(body)));
          expect(splitter.pendingBytes).toBe(0);
        },
      ),
    );
  });
});
