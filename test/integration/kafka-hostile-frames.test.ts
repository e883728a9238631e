/**
 * Hostile frames: each closes only its own connection, while another connection keeps being
 * answered and the log's offsets stay exactly as they were.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { ApiKey, encodeRequest } from '../../shared/kafka/index.js';
import { RawKafkaConnection, startKafkaNode, type KafkaNode } from '../harness/kafka.js';

const FRAME_BYTES_MAX = 64 * 1024;

/** A frame: the body with its int32 size in front. */
function framed(body: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

function sizeOnly(size: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(size);
  return bytes;
}

/** A request header v1 (apiKey, apiVersion, correlationId, clientId "x") and nothing else. */
function header(apiKey: number, apiVersion: number): Buffer {
  const bytes = Buffer.alloc(11);
  bytes.writeInt16BE(apiKey, 0);
  bytes.writeInt16BE(apiVersion, 2);
  bytes.writeInt32BE(7, 4);
  bytes.writeInt16BE(1, 8);
  bytes.write('x', 10);
  return bytes;
}

const produce = () =>
  encodeRequest(ApiKey.Produce, 8, 1, 'x', {
    acks: -1,
    timeoutMs: 1000,
    topicData: [
      {
        name: 'hostile',
        partitionData: [
          {
            index: 0,
            records: encodeBatch([
              { key: 'k', value: Buffer.from('{"a":1}'), timestampMs: Date.now() },
            ]),
          },
        ],
      },
    ],
  });

const HOSTILE: [string, () => Buffer][] = [
  ['a frame of size 0', () => sizeOnly(0)],
  ['a negative size', () => sizeOnly(-1)],
  ['a size past frameBytesMax', () => sizeOnly(FRAME_BYTES_MAX + 1)],
  ['a 2 GiB size', () => sizeOnly(0x7fffffff)],
  ['an unknown API key', () => framed(header(999, 0))],
  ['an unsupported version of Produce', () => framed(header(ApiKey.Produce, 99))],
  ['a header cut short', () => framed(header(ApiKey.Metadata, 1).subarray(0, 5))],
  [
    'a Produce with its fields cut short',
    () => {
      const whole = produce().subarray(4);
      return framed(whole.subarray(0, whole.length - 20));
    },
  ],
  [
    'a huge array count',
    () => {
      const count = Buffer.alloc(4);
      count.writeInt32BE(0x7fffffff);
      return framed(Buffer.concat([header(ApiKey.Metadata, 1), count]));
    },
  ],
  [
    'trailing garbage after a request',
    () => framed(Buffer.concat([produce().subarray(4), Buffer.from('garbage')])),
  ],
  [
    'a string length past the frame',
    () =>
      framed(
        Buffer.concat([
          header(ApiKey.Metadata, 1).subarray(0, 8),
          sizeOnly(0x7fff0000).subarray(0, 2),
        ]),
      ),
  ],
];

describe('hostile frames', () => {
  let kafka: KafkaNode;
  let healthy: RawKafkaConnection;
  beforeAll(async () => {
    kafka = await startKafkaNode({ partitions: 2, frameBytesMax: FRAME_BYTES_MAX });
    await kafka.node.client.append(
      'hostile',
      0,
      encodeBatch([{ key: 'seed', value: Buffer.from('{}'), timestampMs: Date.now() }]),
    );
    healthy = await RawKafkaConnection.open(kafka.listener.port);
  });
  afterAll(async () => {
    healthy?.destroy();
    await kafka?.stop();
  });

  it.each(HOSTILE)('%s closes only its connection and changes nothing', async (_, bytes) => {
    const before = await kafka.node.client.offsets();
    const hostile = await RawKafkaConnection.open(kafka.listener.port);
    try {
      hostile.send(bytes());
      expect(await hostile.closedWithin(5_000)).toBe(true);
      const metadata = await healthy.request(ApiKey.Metadata, 1, { topics: [{ name: 'hostile' }] });
      expect(metadata.topics[0].errorCode).toBe(0);
      expect(await kafka.node.client.offsets()).toEqual(before);
    } finally {
      hostile.destroy();
    }
  });

  it('a connection reset by the client closes only that connection: no unhandled error', async () => {
    // An ECONNRESET reaches the server socket as 'error' before 'close'; anything that awaits the
    // close without handling the error becomes an unhandled rejection, which ends a Node process.
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      const baseline = kafka.listener.connections();
      const resets = await Promise.all(
        [1, 2, 3].map(() => RawKafkaConnection.open(kafka.listener.port)),
      );
      for (const connection of resets) {
        // An answered request first, so the server side is idle, reading, when the RST comes.
        await connection.request(ApiKey.Metadata, 1, { topics: [{ name: 'hostile' }] });
        connection.socket.resetAndDestroy();
      }
      for (let polls = 0; kafka.listener.connections() > baseline && polls < 200; polls++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(kafka.listener.connections()).toBe(baseline);
      // Rejections are reported after the turn that made them: let those turns pass.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
      const metadata = await healthy.request(ApiKey.Metadata, 1, { topics: [{ name: 'hostile' }] });
      expect(metadata.topics[0].errorCode).toBe(0);
    } finally {
      process.off('unhandledRejection', record);
    }
  });

  it('a valid Produce on the healthy connection still appends (the table is not vacuous)', async () => {
    const before = await kafka.node.client.offsets();
    healthy.send(produce());
    await healthy.nextFrame();
    const after = await kafka.node.client.offsets();
    const end = (offsets: typeof before) =>
      offsets.find((o) => o.topic === 'hostile' && o.partition === 0)!.endOffset;
    expect(end(after)).toBe(end(before) + 1);
  });
});
