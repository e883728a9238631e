/**
 * The buffers segment reads fill, lent out and given back once their bytes have left (a Kafka
 * Fetch answer written to its socket), so a consumer reading the log at disk speed does not make
 * a megabyte of garbage a read: a profile of `kcat -C` put a third of the log-node's time in the
 * collector, freeing those buffers. A buffer never given back (an in-process reader keeps views
 * into it) is collected as any other. Only the holder of every view of a buffer may give it
 * back, and only once nothing reads it: a buffer given back while a write still reads it would
 * send another reader's bytes. Giving back twice, or bytes that are not lent, does nothing.
 */

/** Smaller reads come from an ordinary allocation: their garbage is cheap. */
export const POOLED_BYTES_MIN = 64 * 1024;
/** Each doubling of size has this many classes, so a buffer is at most a quarter too large. */
const CLASSES_A_DOUBLING = 4;

export class ReadBuffers {
  private readonly idle = new Map<number, ArrayBuffer[]>();
  private readonly lent = new WeakSet<ArrayBuffer>();
  private idleBytes = 0;

  /** `idleBytesMax`: what the pool keeps between reads; past it a given-back buffer is dropped. */
  constructor(private readonly idleBytesMax: number) {}

  /** A buffer of at least `bytes` bytes (its contents are old bytes: the caller overwrites them). */
  take(bytes: number): Buffer {
    if (bytes < POOLED_BYTES_MIN || this.idleBytesMax === 0) return Buffer.allocUnsafe(bytes);
    const size = sizeClassOf(bytes);
    const reused = this.idle.get(size)?.pop();
    if (reused !== undefined) this.idleBytes -= size;
    // allocUnsafeSlow: memory of its own and not zeroed, as a plain read's Buffer was.
    const memory = reused ?? Buffer.allocUnsafeSlow(size).buffer;
    this.lent.add(memory);
    return Buffer.from(memory, 0, size);
  }

  /** Gives back the buffer `view` lies in, once nothing reads any view of it. */
  giveBack(view: Buffer): void {
    const memory = view.buffer;
    if (!(memory instanceof ArrayBuffer) || !this.lent.has(memory)) return;
    this.lent.delete(memory);
    if (this.idleBytes + memory.byteLength > this.idleBytesMax) return;
    const list = this.idle.get(memory.byteLength);
    if (list === undefined) this.idle.set(memory.byteLength, [memory]);
    else list.push(memory);
    this.idleBytes += memory.byteLength;
  }

  /** Bytes kept for the next reads. */
  get idleBytesNow(): number {
    return this.idleBytes;
  }
}

function sizeClassOf(bytes: number): number {
  const step = 2 ** Math.floor(Math.log2(bytes)) / CLASSES_A_DOUBLING;
  return Math.ceil(bytes / step) * step;
}
