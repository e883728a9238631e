/**
 * Splits a socket's byte stream into Kafka frames (an int32 size, then that many bytes). The size
 * is checked against frameBytesMax as soon as its 4 bytes are in, before any of the body is kept,
 * so a hostile size (2 GiB) fails at once and nothing is allocated for it. A frame that arrived in
 * one chunk is handed out as a subarray of it; only a frame spread over chunks is copied, once,
 * when its last byte is in.
 */
import { KafkaDecodeError } from './errors.js';

/** Kafka's own default for socket.request.max.bytes (100 MiB). */
export const FRAME_BYTES_MAX_DEFAULT = 100 * 1024 * 1024;

export const FRAME_SIZE_BYTES = 4;

export class KafkaFrameSplitter {
  /**
   * The largest frame body from here on; a listener raises it once a connection authenticates
   * (an unauthenticated client gets a small one, as Kafka's sasl.server.max.receive.size).
   */
  frameBytesMax: number;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The body size of the frame being gathered, once its size prefix is in; else -1. */
  private bodyBytes = -1;
  /** Stream bytes consumed before the buffered ones: where errors are, for the log line. */
  private streamAt = 0;

  constructor(frameBytesMax = FRAME_BYTES_MAX_DEFAULT) {
    this.frameBytesMax = frameBytesMax;
  }

  /**
   * The frames `chunk` completes, their size prefixes removed (possibly none). Throws
   * KafkaDecodeError for a size that is negative or over frameBytesMax; the splitter is then
   * spent, and the connection should be closed.
   */
  push(chunk: Buffer): Buffer[] {
    const frames: Buffer[] = [];
    if (chunk.length === 0) return frames;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.bodyBytes < 0) {
        if (this.buffered < FRAME_SIZE_BYTES) break;
        this.bodyBytes = this.readSize();
        this.consume(FRAME_SIZE_BYTES);
      }
      if (this.buffered < this.bodyBytes) break;
      frames.push(this.consume(this.bodyBytes));
      this.bodyBytes = -1;
    }
    return frames;
  }

  /** Bytes held for a frame not yet complete. */
  get pendingBytes(): number {
    return this.buffered;
  }

  private readSize(): number {
    const first = this.chunks[0];
    const size =
      first.length >= FRAME_SIZE_BYTES
        ? first.readInt32BE(0)
        : Buffer.concat(this.chunks, FRAME_SIZE_BYTES).readInt32BE(0);
    if (size < 0 || size > this.frameBytesMax) {
      throw new KafkaDecodeError(
        'frame size',
        `frame size ${size} is outside 0..${this.frameBytesMax} (frameBytesMax)`,
        this.streamAt,
      );
    }
    return size;
  }

  /** Takes the next `bytes` buffered bytes: a subarray when one chunk holds them, else a copy. */
  private consume(bytes: number): Buffer {
    this.streamAt += bytes;
    this.buffered -= bytes;
    if (bytes === 0) return Buffer.alloc(0);
    const first = this.chunks[0];
    if (first.length >= bytes) {
      const taken = first.subarray(0, bytes);
      if (first.length === bytes) this.chunks.shift();
      else this.chunks[0] = first.subarray(bytes);
      return taken;
    }
    const out = Buffer.allocUnsafe(bytes);
    let filled = 0;
    while (filled < bytes) {
      const next = this.chunks[0];
      const take = Math.min(next.length, bytes - filled);
      next.copy(out, filled, 0, take);
      filled += take;
      if (take === next.length) this.chunks.shift();
      else this.chunks[0] = next.subarray(take);
    }
    return out;
  }
}
