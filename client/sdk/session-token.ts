/**
 * Merges read-your-writes tokens in the client, so answers that arrive out of order (concurrent
 * calls of one session) never lose an entry: the session keeps the max per (collection,
 * partition), as mergeTokenOffsets does on the gateway. The bytes are the layout shared/token.ts
 * writes (version ‖ cluster hash ‖ entries of collection id, partition, offset); that module needs
 * Node (Buffer, a native CRC), so this browser-safe reader sits here, and
 * test/unit/client-session-token.test.ts checks the two agree. A token this cannot read (a newer
 * version, another cluster's) replaces the session's instead of merging.
 */

const HEADER_BYTES = 5;
const VERSION = 2;

interface ParsedToken {
  header: Uint8Array;
  /** `collectionId:partition` → [collection id, partition, offset]. */
  entries: Map<string, [number, number, number]>;
}

function fromBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

function toBase64Url(bytes: readonly number[]): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

function parse(text: string): ParsedToken | undefined {
  const bytes = fromBase64Url(text);
  if (bytes === undefined || bytes.length < HEADER_BYTES || bytes[0] !== VERSION) return undefined;
  const entries = new Map<string, [number, number, number]>();
  let at = HEADER_BYTES;
  const varint = (): number | undefined => {
    let value = 0;
    let scale = 1;
    for (; at < bytes.length; scale *= 0x80) {
      const byte = bytes[at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
    return undefined;
  };
  while (at < bytes.length) {
    if (bytes.length - at < 4) return undefined;
    const id =
      ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0;
    at += 4;
    const partition = varint();
    const offset = varint();
    if (partition === undefined || offset === undefined) return undefined;
    entries.set(`${id}:${partition}`, [id, partition, offset]);
  }
  return { header: bytes.subarray(0, HEADER_BYTES), entries };
}

function write(out: number[], value: number): void {
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

function sameHeader(a: Uint8Array, b: Uint8Array): boolean {
  return a.every((byte, i) => byte === b[i]);
}

/** The token that covers both: max per entry; `next` alone when they cannot be merged. */
export function mergeTokens(current: string | undefined, next: string): string {
  if (current === undefined || current === next) return next;
  const a = parse(current);
  const b = parse(next);
  if (a === undefined || b === undefined || !sameHeader(a.header, b.header)) return next;
  for (const [name, entry] of a.entries) {
    const other = b.entries.get(name);
    if (other === undefined || other[2] < entry[2]) b.entries.set(name, entry);
  }
  const ordered = [...b.entries.values()].sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const out = [...b.header];
  for (const [id, partition, offset] of ordered) {
    out.push((id >>> 24) & 0xff, (id >>> 16) & 0xff, (id >>> 8) & 0xff, id & 0xff);
    write(out, partition);
    write(out, offset);
  }
  return toBase64Url(out);
}
