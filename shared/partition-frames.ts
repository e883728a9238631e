/**
 * Several topic-partitions' bytes in one internal request (shared/FORMAT.md): a sequence of
 * frames, each `topicLength` (uint8), `topic` (ASCII), `partition` (uint32 BE), `length` (uint32
 * BE), then `length` bytes. A multi-partition append carries one encoded batch per frame; nothing
 * else is framed this way.
 */
import { badRequest } from './errors.js';
import type { TopicPartition } from './log-api.js';
import { isKnownTopicName } from './topics.js';

export interface PartitionFrame extends TopicPartition {
  bytes: Buffer;
}

/** The fixed part of a frame: topic length, partition and length; the topic's bytes follow. */
export const FRAME_HEADER_BYTES = 9;

export function encodeFrames(frames: readonly PartitionFrame[]): Buffer {
  const total = frames.reduce(
    (sum, frame) => sum + FRAME_HEADER_BYTES + frame.topic.length + frame.bytes.length,
    0,
  );
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const { topic, partition, bytes } of frames) {
    out.writeUInt8(topic.length, at);
    at += 1 + out.write(topic, at + 1, 'latin1');
    out.writeUInt32BE(partition, at);
    out.writeUInt32BE(bytes.length, at + 4);
    out.set(bytes, at + 8);
    at += 8 + bytes.length;
  }
  return out;
}

/**
 * The frames of a body, which must be whole frames naming topics a log-node can hold, and at most
 * `framesMax` of them (else 400).
 */
export function decodeFrames(body: Buffer, framesMax: number): PartitionFrame[] {
  const frames: PartitionFrame[] = [];
  let at = 0;
  while (at < body.length) {
    if (frames.length === framesMax) {
      throw badRequest('too_many_frames', `a request carries at most ${framesMax} partitions`, {
        limit: 'partitionsMax',
        max: framesMax,
      });
    }
    if (body.length - at < FRAME_HEADER_BYTES) throw truncated(at);
    const topicEnd = at + 1 + body.readUInt8(at);
    if (body.length - topicEnd < FRAME_HEADER_BYTES - 1) throw truncated(at);
    const topic = body.toString('latin1', at + 1, topicEnd);
    if (!isKnownTopicName(topic)) {
      throw badRequest('invalid_frames', `the frame at byte ${at} names no valid topic`, { at });
    }
    const partition = body.readUInt32BE(topicEnd);
    const length = body.readUInt32BE(topicEnd + 4);
    const start = topicEnd + 8;
    if (body.length - start < length) throw truncated(at);
    frames.push({ topic, partition, bytes: body.subarray(start, start + length) });
    at = start + length;
  }
  if (frames.length === 0) throw badRequest('invalid_frames', 'the body holds no frame');
  return frames;
}

function truncated(at: number) {
  return badRequest('invalid_frames', `the frame at byte ${at} is cut short`, { at });
}
