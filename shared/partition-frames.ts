/**
 * Several partitions' bytes in one internal request or answer (shared/FORMAT.md): a sequence of
 * frames, each `partition` (uint32 BE), `length` (uint32 BE), then `length` bytes. A multi-partition
 * append carries one encoded batch per frame; nothing else is framed this way.
 */
import { badRequest } from './errors.js';

export interface PartitionFrame {
  partition: number;
  bytes: Buffer;
}

export const FRAME_HEADER_BYTES = 8;

export function encodeFrames(frames: readonly PartitionFrame[]): Buffer {
  const total = frames.reduce((sum, frame) => sum + FRAME_HEADER_BYTES + frame.bytes.length, 0);
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const { partition, bytes } of frames) {
    out.writeUInt32BE(partition, at);
    out.writeUInt32BE(bytes.length, at + 4);
    out.set(bytes, at + FRAME_HEADER_BYTES);
    at += FRAME_HEADER_BYTES + bytes.length;
  }
  return out;
}

/** The frames of a body, which must be whole frames and at most `framesMax` of them (else 400). */
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
    const partition = body.readUInt32BE(at);
    const length = body.readUInt32BE(at + 4);
    const start = at + FRAME_HEADER_BYTES;
    if (body.length - start < length) throw truncated(at);
    frames.push({ partition, bytes: body.subarray(start, start + length) });
    at = start + length;
  }
  if (frames.length === 0) throw badRequest('invalid_frames', 'the body holds no frame');
  return frames;
}

function truncated(at: number) {
  return badRequest('invalid_frames', `the frame at byte ${at} is cut short`, { at });
}
