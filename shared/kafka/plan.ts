/**
 * Compiles a message declaration for one version into a flat plan, once, cached: which fields
 * the version has, which are nullable, compact or tagged, their defaults, and the least bytes each
 * takes on the wire (so a hostile array count is refused before anything is allocated). The
 * encoder and decoder (codec.ts) then walk plans with a switch on small integers: no version
 * ranges parsed, no closures made, per message.
 */
import type { FieldSpec, MessageSpec, PrimitiveType } from './schema.js';
import { camelName, inVersions } from './schema.js';

/**
 * How deep structs may nest in a declaration. Nesting follows the declaration, never the input,
 * so this bounds the decoder's recursion by construction; Kafka's deepest message here has 4.
 */
export const SCHEMA_DEPTH_MAX = 8;

export const Op = {
  Bool: 0,
  Int8: 1,
  Int16: 2,
  Uint16: 3,
  Int32: 4,
  Int64: 5,
  Float64: 6,
  String: 7,
  Bytes: 8,
  Uuid: 9,
  Records: 10,
  Struct: 11,
} as const;
export type Op = (typeof Op)[keyof typeof Op];

const PRIMITIVE_OPS: Record<PrimitiveType, Op> = {
  bool: Op.Bool,
  int8: Op.Int8,
  int16: Op.Int16,
  uint16: Op.Uint16,
  int32: Op.Int32,
  int64: Op.Int64,
  float64: Op.Float64,
  string: Op.String,
  bytes: Op.Bytes,
  uuid: Op.Uuid,
  records: Op.Records,
};

export const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

export interface Step {
  /** The body's property name (camelCase). */
  readonly key: string;
  /** Where the field sits, for error messages: "topics[].partitions[].fetchOffset". */
  readonly path: string;
  /** The value's type; for an array, its elements' type. */
  readonly op: Op;
  readonly array: boolean;
  /** The field exists in this version (else the decoder fills in its default). */
  readonly present: boolean;
  readonly nullable: boolean;
  /** Lengths and counts as unsigned varints (flexible versions) rather than int16/int32. */
  readonly compact: boolean;
  /** The tag, if the field is a tagged field in this version; else -1. */
  readonly tag: number;
  /** The default of a scalar field (arrays default to [], structs to their fields' defaults). */
  readonly scalarDefault: unknown;
  /** For a struct or an array of structs. */
  readonly struct: Plan | null;
  /** The least bytes one value (one element, for an array) takes on the wire. */
  readonly elementBytesMin: number;
}

export interface Plan {
  readonly name: string;
  readonly version: number;
  readonly flexible: boolean;
  /** Every declared field, in order: the decoder builds each object in this one shape. */
  readonly steps: readonly Step[];
  /** The fields on the wire in order (present, untagged). */
  readonly wire: readonly Step[];
  /** The tagged fields of this version, by ascending tag. */
  readonly tagged: readonly Step[];
  readonly bytesMin: number;
}

const plans = new WeakMap<MessageSpec, Map<number, Plan>>();

/** The plan of `spec` at `version`, which must be in its validVersions (checked by the caller). */
export function planOf(spec: MessageSpec, version: number): Plan {
  let byVersion = plans.get(spec);
  if (!byVersion) plans.set(spec, (byVersion = new Map()));
  let plan = byVersion.get(version);
  if (!plan) {
    const flexible = inVersions(spec.flexibleVersions, version);
    plan = compileStruct(spec.name, spec.fields, version, flexible, '', 1);
    byVersion.set(version, plan);
  }
  return plan;
}

function compileStruct(
  name: string,
  fields: readonly FieldSpec[],
  version: number,
  flexible: boolean,
  prefix: string,
  depth: number,
): Plan {
  if (depth > SCHEMA_DEPTH_MAX) {
    throw new Error(`${name}: structs nest deeper than SCHEMA_DEPTH_MAX (${SCHEMA_DEPTH_MAX})`);
  }
  const steps = fields.map((field) => compileField(field, version, flexible, prefix, depth));
  const wire = steps.filter((step) => step.present && step.tag < 0);
  const tagged = steps
    .filter((step) => step.present && step.tag >= 0)
    .sort((a, b) => a.tag - b.tag);
  const tagsBytes = flexible ? 1 : 0;
  const bytesMin = wire.reduce((sum, step) => sum + wireBytesMin(step), tagsBytes);
  return { name, version, flexible, steps, wire, tagged, bytesMin };
}

function compileField(
  field: FieldSpec,
  version: number,
  flexible: boolean,
  prefix: string,
  depth: number,
): Step {
  const array = field.type.startsWith('[]');
  const typeName = array ? field.type.slice(2) : field.type;
  const key = camelName(field.name);
  const path = prefix + key;
  const present = inVersions(field.versions, version);
  const nullable = present && inVersions(field.nullableVersions, version);
  const compact =
    flexible &&
    (field.flexibleVersions === undefined || inVersions(field.flexibleVersions, version));
  const tag =
    present && flexible && inVersions(field.taggedVersions, version) ? (field.tag ?? -1) : -1;
  if (
    present &&
    field.taggedVersions !== undefined &&
    inVersions(field.taggedVersions, version) &&
    tag < 0
  ) {
    throw new Error(`${path}: a tagged field needs a tag`);
  }
  let op: Op;
  let struct: Plan | null = null;
  if (field.fields) {
    if (nullable && !array) throw new Error(`${path}: nullable structs are not supported`);
    op = Op.Struct;
    struct = compileStruct(
      typeName,
      field.fields,
      version,
      flexible,
      `${path}${array ? '[]' : ''}.`,
      depth + 1,
    );
  } else if (typeName in PRIMITIVE_OPS) {
    op = PRIMITIVE_OPS[typeName as PrimitiveType];
  } else {
    throw new Error(`${path}: unknown type "${field.type}"`);
  }
  const base = { op, array, present, nullable, compact, tag, struct, key, path };
  const elementBytesMin = Math.max(1, valueBytesMin(op, compact, struct));
  return { ...base, scalarDefault: scalarDefault(field, op), elementBytesMin };
}

/** The least bytes one value of `op` takes, lengths and counts being zero. */
function valueBytesMin(op: Op, compact: boolean, struct: Plan | null): number {
  switch (op) {
    case Op.Bool:
    case Op.Int8:
      return 1;
    case Op.Int16:
    case Op.Uint16:
      return 2;
    case Op.Int32:
      return 4;
    case Op.Int64:
    case Op.Float64:
      return 8;
    case Op.Uuid:
      return 16;
    case Op.String:
      return compact ? 1 : 2;
    case Op.Bytes:
    case Op.Records:
      return compact ? 1 : 4;
    case Op.Struct:
      return struct!.bytesMin;
  }
}

function wireBytesMin(step: Step): number {
  if (step.array) return step.compact ? 1 : 4;
  return valueBytesMin(step.op, step.compact, step.struct);
}

function scalarDefault(field: FieldSpec, op: Op): unknown {
  const given = field.default;
  if (given === null) return null;
  switch (op) {
    case Op.Bool:
      return given === true;
    case Op.Int64:
      return BigInt(given ?? 0);
    case Op.Int8:
    case Op.Int16:
    case Op.Uint16:
    case Op.Int32:
    case Op.Float64:
      return Number(given ?? 0);
    case Op.String:
      return given ?? '';
    case Op.Uuid:
      return ZERO_UUID;
    case Op.Bytes:
      return Buffer.alloc(0);
    case Op.Records:
      return null;
    case Op.Struct:
      return undefined;
  }
}
