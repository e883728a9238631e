// Proves a bulk body is parsed on the HTTP thread in slices: the event loop takes turns while a
// 5,000-line NDJSON body is parsed (a key read waiting behind it is answered in between), and
// the slices give the same records, and the same refusal, as a parse in one go.
import { describe, expect, it } from 'vitest';
import { parseBulkInSlices } from '../../gateway/bulk.js';
import { DEFAULT_LIMITS } from '../../gateway/config.js';

const NDJSON_TYPE = 'application/x-ndjson';
/** Slices no parse outlasts: the parse in one go, with no turn in it. */
const ONE_GO = { ...DEFAULT_LIMITS, bulkParseSliceMsMax: 3_600_000 };
const LINES = 5_000;
const body = Array.from({ length: LINES }, (_, i) =>
  JSON.stringify({ key: `k${i}`, value: { title: `title ${i}`, body: 'word '.repeat(100) } }),
).join('\n');

describe('a bulk body parsed in slices', () => {
  it('lets the event loop turn while it parses, and gives what a parse in one go gives', async () => {
    const limits = { ...DEFAULT_LIMITS, bulkParseSliceMsMax: 1 };
    let turns = 0;
    let parsed = false;
    const tick = () => {
      if (parsed) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const records = await parseBulkInSlices(body, NDJSON_TYPE, limits, 7);
    parsed = true;
    // The parse takes tens of ms: at 1 ms a slice the loop turned many times (none in one go).
    expect(turns).toBeGreaterThan(5);
    const text = (list: typeof records) =>
      list.map((r) => `${r.key} ${r.timestampMs} ${r.value?.toString()}`);
    expect(text(records)).toEqual(text(await parseBulkInSlices(body, NDJSON_TYPE, ONE_GO, 7)));
  });

  it('refuses what a parse in one go refuses, naming the same record', async () => {
    const bad = `${body}\n{"key":"","value":{}}`;
    const limits = { ...DEFAULT_LIMITS, bulkParseSliceMsMax: 1 };
    const refusal = { code: 'invalid_key', details: expect.objectContaining({ index: LINES }) };
    await expect(parseBulkInSlices(bad, NDJSON_TYPE, ONE_GO, 0)).rejects.toMatchObject(refusal);
    await expect(parseBulkInSlices(bad, NDJSON_TYPE, limits, 0)).rejects.toMatchObject(refusal);
  });
});
