/**
 * Round trips of every supported API, request and response, at every supported version: bodies
 * drawn by fast-check from the declarations themselves (nulls, tagged fields, empty and non-empty
 * arrays, non-ASCII strings), encoded, decoded, and compared with what that version can carry
 * (fields it lacks come back as their defaults).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ApiKey,
  KAFKA_APIS,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  supportedVersions,
  type ApiSpec,
} from '../../shared/kafka/index.js';
import { defaultValue } from '../../shared/kafka/codec.js';
import { Op, planOf, type Plan, type Step } from '../../shared/kafka/plan.js';

type Body = Record<string, unknown>;

const int = (min: number, max: number) => fc.integer({ min, max });

function scalarArbitrary(step: Step): fc.Arbitrary<unknown> {
  switch (step.op) {
    case Op.Bool:
      return fc.boolean();
    case Op.Int8:
      return int(-0x80, 0x7f);
    case Op.Int16:
      return int(-0x8000, 0x7fff);
    case Op.Uint16:
      return int(0, 0xffff);
    case Op.Int32:
      return int(-0x80000000, 0x7fffffff);
    case Op.Int64:
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case Op.Float64:
      return fc.double({ noNaN: true });
    case Op.Uuid:
      return fc.uuid();
    case Op.String:
      return fc.string({ unit: 'grapheme', maxLength: 8 });
    case Op.Bytes:
    case Op.Records:
      return fc.uint8Array({ maxLength: 12 }).map((bytes) => Buffer.from(bytes));
    case Op.Struct:
      return structArbitrary(step.struct!);
  }
}

function fieldArbitrary(step: Step): fc.Arbitrary<unknown> {
  const value = step.array
    ? fc.array(scalarArbitrary(step), { maxLength: 3 })
    : scalarArbitrary(step);
  return step.nullable || step.op === Op.Records ? fc.option(value, { nil: null }) : value;
}

function structArbitrary(plan: Plan): fc.Arbitrary<Body> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const step of plan.steps) if (step.present) fields[step.key] = fieldArbitrary(step);
  return fc.record(fields);
}

/** What decoding `body` at the plan's version gives: absent fields become their defaults. */
function expected(plan: Plan, body: Body): Body {
  const out: Body = {};
  for (const step of plan.steps) {
    const value = step.present ? body[step.key] : defaultValue(step);
    out[step.key] = step.op === Op.Struct && step.present ? structValue(step, value) : value;
  }
  return out;
}

function structValue(step: Step, value: unknown): unknown {
  if (value === null) return null;
  if (step.array) return (value as Body[]).map((item) => expected(step.struct!, item));
  return expected(step.struct!, value as Body);
}

function versionsOf(api: ApiSpec): number[] {
  const range = supportedVersions().find((entry) => entry.apiKey === api.request.apiKey)!;
  const versions: number[] = [];
  for (let v = range.minVersion; v <= range.maxVersion; v++) versions.push(v);
  return versions;
}

describe('every API round-trips at every supported version', () => {
  for (const [name, api] of Object.entries(KAFKA_APIS) as [string, ApiSpec][]) {
    const apiKey = api.request.apiKey as ApiKey;
    for (const version of versionsOf(api)) {
      it(`${name} v${version} request`, () => {
        const plan = planOf(api.request, version);
        fc.assert(
          fc.property(
            structArbitrary(plan),
            int(-0x80000000, 0x7fffffff),
            fc.option(fc.string(), { nil: null }),
            (body, correlationId, clientId) => {
              const frame = encodeRequest(apiKey, version, correlationId, clientId, body as never);
              expect(frame.readInt32BE(0)).toBe(frame.length - 4);
              const decoded = decodeRequest(frame.subarray(4));
              expect(decoded).toEqual({
                kind: 'request',
                apiKey,
                apiVersion: version,
                correlationId,
                clientId,
                body: expected(plan, body),
              });
            },
          ),
          { numRuns: 40 },
        );
      });

      it(`${name} v${version} response`, () => {
        const plan = planOf(api.response, version);
        fc.assert(
          fc.property(structArbitrary(plan), int(0, 0x7fffffff), (body, correlationId) => {
            const frame = encodeResponse(apiKey, version, correlationId, body as never);
            expect(frame.readInt32BE(0)).toBe(frame.length - 4);
            const decoded = decodeResponse(apiKey, version, frame.subarray(4));
            expect(decoded).toEqual({ correlationId, body: expected(plan, body) });
          }),
          { numRuns: 40 },
        );
      });
    }
  }
});

describe('bodies', () => {
  it('fill the defaults of every field a body leaves out', () => {
    const frame = encodeResponse(ApiKey.Metadata, 9, 7, {});
    const { body } = decodeResponse(ApiKey.Metadata, 9, frame.subarray(4));
    expect(body).toEqual({
      throttleTimeMs: 0,
      brokers: [],
      clusterId: null,
      controllerId: -1,
      topics: [],
      clusterAuthorizedOperations: -2147483648,
    });
  });

  it('keep records as a view of the frame, not a copy', () => {
    const records = Buffer.from('a record batch, opaque to the codec');
    const frame = encodeRequest(ApiKey.Produce, 9, 1, 'c', {
      acks: -1,
      timeoutMs: 100,
      topicData: [{ name: 't', partitionData: [{ index: 0, records }] }],
    });
    const request = decodeRequest(frame.subarray(4));
    if (request.kind !== 'request' || request.apiKey !== ApiKey.Produce) throw new Error('no');
    const decoded = request.body.topicData[0].partitionData[0].records!;
    expect(decoded).toEqual(records);
    expect(decoded.buffer).toBe(frame.buffer);
  });

  it('accept int64 fields as safe-integer numbers', () => {
    const frame = encodeResponse(ApiKey.InitProducerId, 4, 1, { producerId: 42, producerEpoch: 0 });
    expect(decodeResponse(ApiKey.InitProducerId, 4, frame.subarray(4)).body.producerId).toBe(42n);
  });
});
