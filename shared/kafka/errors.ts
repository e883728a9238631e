/**
 * The codec's two failures. A frame that does not decode is the peer's fault and the server
 * answers it by closing the connection (Kafka has no error answer for an unparseable request), so
 * KafkaDecodeError says what was wrong and at which byte, for the log line. A body that does not
 * encode is this process's fault (a handler built a wrong answer): KafkaEncodeError names the field.
 */
export class KafkaDecodeError extends Error {
  override name = 'KafkaDecodeError';
  /**
   * What failed: "truncated", "length", "varint", "utf8", "trailing bytes", "frame size",
   * "elements" (the decoded-element budget), ...
   */
  readonly what: string;
  /** The byte offset in the frame (or the stream, for framing) where it failed. */
  readonly at: number;
  /** The field being read, as a dotted path ("topicData[].partitionData[].records"), if any. */
  readonly field: string | undefined;

  constructor(what: string, message: string, at: number, field?: string) {
    super(field === undefined ? `${message} at byte ${at}` : `${field}: ${message} at byte ${at}`);
    this.what = what;
    this.at = at;
    this.field = field;
  }
}

export class KafkaEncodeError extends Error {
  override name = 'KafkaEncodeError';
  readonly field: string;

  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}
