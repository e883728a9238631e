/**
 * NDJSON on the client: a byte stream split into lines (the change feed, a bulk file or stdin),
 * and lines grouped into the chunks `bulk` sends, each bounded in lines and in bytes so that no
 * request exceeds what the gateway takes (bulkRecordsMax, bulkBytesMax).
 */
export interface Line {
  /** 1-based line number in the source. */
  number: number;
  text: string;
  /** Bytes the line took in the source, with its line break. */
  bytes: number;
}

/** Splits a stream into lines; `\r\n` counts as one break; a line longer than lineCharsMax throws. */
export async function* splitLines(
  source: AsyncIterable<Uint8Array | string>,
  lineCharsMax: number,
): AsyncGenerator<Line> {
  const decoder = new TextDecoder('utf-8');
  let pending = '';
  let number = 0;
  const line = (raw: string): Line => {
    number += 1;
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    return { number, text, bytes: Buffer.byteLength(raw) + 1 };
  };
  for await (const piece of source) {
    pending += typeof piece === 'string' ? piece : decoder.decode(piece, { stream: true });
    let at = pending.indexOf('\n');
    let start = 0;
    while (at !== -1) {
      yield line(pending.slice(start, at));
      start = at + 1;
      at = pending.indexOf('\n', start);
    }
    pending = pending.slice(start);
    if (pending.length > lineCharsMax) {
      throw new RangeError(`line ${number + 1} is longer than ${lineCharsMax} characters`);
    }
  }
  pending += decoder.decode();
  if (pending !== '') yield line(pending);
}

export interface ChunkLimits {
  linesMax: number;
  bytesMax: number;
}

export interface Chunk {
  /** The non-blank lines joined by `\n`, ready to send as application/x-ndjson. */
  body: string;
  /** The source line number of each line in body, to name a rejected record. */
  lineNumbers: number[];
  /** Source bytes this chunk consumed, blank lines included, for progress. */
  sourceBytes: number;
}

/**
 * Groups non-blank lines into chunks of at most linesMax lines and bytesMax bytes; a single line
 * larger than bytesMax travels alone (the gateway then names the limit it breaks).
 */
export async function* chunkLines(
  lines: AsyncIterable<Line>,
  limits: ChunkLimits,
): AsyncGenerator<Chunk> {
  let texts: string[] = [];
  let lineNumbers: number[] = [];
  let bodyBytes = 0;
  let sourceBytes = 0;
  const flush = (): Chunk => {
    const chunk = { body: texts.join('\n'), lineNumbers, sourceBytes };
    texts = [];
    lineNumbers = [];
    bodyBytes = 0;
    sourceBytes = 0;
    return chunk;
  };
  for await (const line of lines) {
    if (line.text.trim() === '') {
      sourceBytes += line.bytes;
      continue;
    }
    const lineBytes = Buffer.byteLength(line.text) + 1;
    if (texts.length > 0 && bodyBytes + lineBytes > limits.bytesMax) yield flush();
    texts.push(line.text);
    lineNumbers.push(line.number);
    bodyBytes += lineBytes;
    sourceBytes += line.bytes;
    if (texts.length >= limits.linesMax) yield flush();
  }
  if (texts.length > 0 || sourceBytes > 0) yield flush();
}
