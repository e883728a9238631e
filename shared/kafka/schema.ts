/**
 * The shape of a Kafka message declared as data, as Apache Kafka declares its own
 * (clients/src/main/resources/common/message/*.json): one declaration per request and per
 * response covers every version, each field saying in which versions it exists, may be null, or
 * travels as a tagged field. The codec (codec.ts) walks these declarations; nothing else in the
 * codec knows about any one message.
 *
 * The types below also derive, from a declaration written `as const`, the plain JS object a body
 * decodes to (`BodyOf`) and the looser one an encoder accepts (`BodyInput`: fields optional, int64
 * also as a safe-integer number): field names in camelCase, int64 as bigint, bytes and records as
 * Buffer, uuid as its 8-4-4-4-12 hex string.
 */

/** A version range as Kafka writes it: "3", "0+", "3-5" or "none". */
export type VersionRange = string;

export type PrimitiveType =
  | 'bool'
  | 'int8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'int64'
  | 'float64'
  | 'string'
  | 'bytes'
  | 'uuid'
  | 'records';

export interface FieldSpec {
  readonly name: string;
  /** A primitive, `[]primitive`, or a struct's name (`[]Name` for an array of it) with `fields`. */
  readonly type: string;
  readonly versions: VersionRange;
  readonly nullableVersions?: VersionRange;
  readonly taggedVersions?: VersionRange;
  readonly tag?: number;
  /** Kafka's default for the field (absent: 0, false, "", empty, the zero uuid, null records). */
  readonly default?: number | boolean | string | null;
  /** Overrides the message's flexible versions (the request header's ClientId is never compact). */
  readonly flexibleVersions?: VersionRange;
  readonly fields?: readonly FieldSpec[];
}

export interface MessageSpec {
  /** The API key of a request or response; headers have none. */
  readonly apiKey?: number;
  readonly type: 'request' | 'response' | 'header';
  readonly name: string;
  /** The versions tailbase supports: a sub-range of Kafka's own, chosen in PROTOCOL.md. */
  readonly validVersions: VersionRange;
  readonly flexibleVersions: VersionRange;
  readonly fields: readonly FieldSpec[];
}

/** [min, max] of a range; max is Infinity for "N+"; null for "none". */
export function parseVersionRange(range: VersionRange): [number, number] | null {
  if (range === 'none') return null;
  const plus = /^(\d+)\+$/.exec(range);
  if (plus) return [Number(plus[1]), Infinity];
  const span = /^(\d+)-(\d+)$/.exec(range);
  if (span) return [Number(span[1]), Number(span[2])];
  if (/^\d+$/.test(range)) return [Number(range), Number(range)];
  throw new Error(`not a version range: "${range}"`);
}

export function inVersions(range: VersionRange | undefined, version: number): boolean {
  if (range === undefined) return false;
  const bounds = parseVersionRange(range);
  return bounds !== null && version >= bounds[0] && version <= bounds[1];
}

/** A Kafka field name (PascalCase) as a body's property name. */
export function camelName(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

type PrimitiveValue<T extends string> = T extends 'bool'
  ? boolean
  : T extends 'int64'
    ? bigint
    : T extends 'int8' | 'int16' | 'uint16' | 'int32' | 'float64'
      ? number
      : T extends 'string' | 'uuid'
        ? string
        : T extends 'bytes'
          ? Buffer
          : T extends 'records'
            ? Buffer | null
            : never;

type NullIn<F> = F extends { readonly nullableVersions: string } ? null : never;

type ValueOf<F extends FieldSpec> = F extends {
  readonly fields: infer S extends readonly FieldSpec[];
}
  ? F['type'] extends `[]${string}`
    ? BodyOf<S>[] | NullIn<F>
    : BodyOf<S> | NullIn<F>
  : F['type'] extends `[]${infer E}`
    ? PrimitiveValue<E>[] | NullIn<F>
    : PrimitiveValue<F['type']> | NullIn<F>;

type InputOf<F extends FieldSpec> = F extends {
  readonly fields: infer S extends readonly FieldSpec[];
}
  ? F['type'] extends `[]${string}`
    ? BodyInput<S>[] | NullIn<F>
    : BodyInput<S> | NullIn<F>
  : F['type'] extends 'int64'
    ? bigint | number
    : ValueOf<F>;

/**
 * A decoded body: every field of the declaration, in every version (fields the version lacks hold
 * their default), so a handler reads the same shape whatever version the client spoke.
 */
export type BodyOf<S extends readonly FieldSpec[]> = {
  -readonly [F in S[number] as Uncapitalize<F['name']>]: ValueOf<F>;
};

/** A body to encode: any field left out takes its default. */
export type BodyInput<S extends readonly FieldSpec[]> = {
  -readonly [F in S[number] as Uncapitalize<F['name']>]?: InputOf<F>;
};
