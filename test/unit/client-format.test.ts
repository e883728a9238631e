// Proves the CLI's human output: aligned tables, JSON cut to fit, partition lists, the status
// table read defensively from GET /v1/status, when a rebuild counts as caught up, change lines,
// and that a rejected bulk record is named by its line in the source file.
import { describe, expect, it } from 'vitest';
import { locateRejection } from '../../client/commands/bulk.js';
import { formatDocuments } from '../../client/commands/scan.js';
import { formatChange } from '../../client/commands/tail.js';
import {
  formatBytes,
  formatPartitionList,
  formatTable,
  summarizeJson,
} from '../../client/format.js';
import { readRebuildProgress } from '../../client/rebuild-progress.js';
import { formatStatus, readStatus } from '../../client/status-view.js';
import { TailbaseError } from '../../shared/errors.js';

describe('formatting', () => {
  it('aligns table columns and leaves the last one unpadded; missing cells are -', () => {
    expect(
      formatTable(
        ['A', 'LONGER', 'C'],
        [
          ['xyz', 1, 'v'],
          [null, 'éé', undefined],
        ],
      ),
    ).toBe('A    LONGER  C\nxyz  1       v\n-    éé      -\n');
  });

  it('cuts JSON to the width with an ellipsis, counting characters not bytes', () => {
    expect(summarizeJson({ a: 1 }, 20)).toBe('{"a":1}');
    expect(summarizeJson({ name: 'ééééééé' }, 10)).toBe('{"name":"…');
    expect([...summarizeJson({ name: 'ééééééé' }, 10)]).toHaveLength(10);
  });

  it('formats bytes in binary units, three digits, and leaves unknown (null) as null, never 0', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.00 KiB');
    expect(formatBytes(1_268_000)).toBe('1.21 MiB');
    expect(formatBytes(5 * 1024 ** 3)).toBe('5.00 GiB');
    expect(formatBytes(null)).toBeNull();
  });

  it('formats more rows than a call can take arguments (scan --all of 200k documents)', () => {
    const rowsCount = 200_000;
    const rows = Array.from({ length: rowsCount }, (_, i) => [`k${i}`, i]);
    const table = formatTable(['KEY', 'N'], rows);
    expect(table.split('\n')[rowsCount]).toBe(`k${rowsCount - 1}  ${rowsCount - 1}`);
    const items = Array.from({ length: rowsCount }, (_, i) => ({
      key: `key-${i}`,
      value: { i },
      offset: i,
    }));
    const lines = formatDocuments(items, 80).split('\n');
    expect(lines[0]).toMatch(/^KEY {9}OFFSET {2}VALUE$/);
    expect(lines[rowsCount]).toBe(`key-${rowsCount - 1}  ${rowsCount - 1}  {"i":${rowsCount - 1}}`);
  });

  it('writes partition lists as ranges', () => {
    expect(formatPartitionList([6, 0, 1, 2, 3, 9, 10])).toBe('0-3,6,9-10');
    expect(formatPartitionList([])).toBe('');
  });

  it('prints a change as partition:offset collection/key value, deletes marked', () => {
    const event = { collection: 'c', key: 'k', partition: 2, offset: 7, token: 't' };
    expect(formatChange({ ...event, value: { a: 1 } }, 80)).toBe('2:7  c/k  {"a":1}');
    expect(formatChange({ ...event, value: null }, 80)).toBe('2:7  c/k  (deleted)');
  });

  it("prints a view's reset as a reset, not as a change", () => {
    const reset = { collection: 'v', reset: true as const, version: 42, token: 't' };
    expect(formatChange(reset, 80)).toBe(
      'reset  v  (version 42 follows from its start; forget what came before)',
    );
  });

  it('names the source line of a record the gateway rejected by line or by index', () => {
    const chunk = { body: '', lineNumbers: [10, 12, 15], sourceBytes: 0 };
    const byLine = locateRejection(
      new TailbaseError(400, 'invalid_json', 'bad', { line: 2 }),
      chunk,
      30,
    );
    expect(byLine.message).toBe('line 12: bad (30 records before it were written)');
    expect(byLine.details).toMatchObject({ line: 12, written: 30 });
    const byIndex = locateRejection(
      new TailbaseError(400, 'invalid_record', 'bad', { index: 2 }),
      chunk,
      0,
    );
    expect(byIndex.message).toMatch(/^line 15: bad/);
    // The gateway counts lines within the chunk; its message must not contradict the source line.
    const inner = locateRejection(
      new TailbaseError(400, 'invalid_json', 'line 2 is not valid JSON: Unexpected token', {
        line: 2,
      }),
      chunk,
      30,
    );
    expect(inner.message).toBe(
      'line 12 is not valid JSON: Unexpected token (30 records before it were written)',
    );
    expect(inner.message).not.toMatch(/line 2\b/);
    const whole = locateRejection(new TailbaseError(413, 'bulk_too_large', 'big'), chunk, 0);
    expect(whole.message).toMatch(/^the chunk of lines 10-15: big/);
  });
});

describe('status view', () => {
  const status = {
    clusterId: 'C1',
    partitions: [
      {
        topic: '__tailbase_settings',
        partition: 0,
        logStartOffset: 0,
        endOffset: 1,
        replicas: [{ node: 0, up: true, applied: 1, lag: 0, state: 'tailing' }],
      },
      {
        topic: 'books',
        partition: 0,
        logStartOffset: 0,
        endOffset: 12,
        replicas: [{ node: 0, up: true, applied: 10, lag: 2, state: 'tailing' }],
      },
      { topic: 'books', partition: 1, logStartOffset: 3, endOffset: 5, replicas: [] },
    ],
    serveNodes: [{ node: 0, nodeId: 'serve-1', up: true, ready: false, partitions: [0, 1, 2] }],
  };

  it('reads the gateway shape into a table of partitions and one of serve-nodes', () => {
    const text = formatStatus(readStatus(status));
    expect(text).toBe(
      [
        'cluster C1',
        'TOPIC                PARTITION  LOG START  LOG END  NODE  UP   APPLIED  LAG  STATE',
        '__tailbase_settings  0          0          1        0     yes  1        0    tailing',
        'books                0          0          12       0     yes  10       2    tailing',
        'books                1          3          5        -     -    -        -    -',
        '',
        'NODE  NODE ID  UP   READY  PARTITIONS',
        '0     serve-1  yes  no     0-2',
        '',
      ].join('\n'),
    );
  });

  it('puts one row a collection first, the lag over collections, and marks internal topics', () => {
    const text = formatStatus(
      readStatus({
        ...status,
        lagRecords: 2,
        collections: [
          { collection: 'books', partitions: 2, endOffset: 17, lagRecords: 2, state: 'replaying' },
        ],
        partitions: status.partitions.map((p) => ({ ...p, internal: p.topic.startsWith('__') })),
      }),
    );
    const lines = text.split('\n');
    expect(lines.slice(0, 4)).toEqual([
      'cluster C1, 2 record(s) behind',
      'COLLECTION  PARTITIONS  LOG END  LAG  STATE',
      'books       2           17       2    replaying',
      '',
    ]);
    expect(lines[5]).toMatch(/^__tailbase_settings \(internal\)\s+0/);
    expect(lines[6]).toMatch(/^books\s+0\s+0\s+12/);
  });

  it("puts one row a view after the collections: its lag and a rebuild's progress", () => {
    const text = formatStatus(
      readStatus({
        ...status,
        views: [
          { view: 'per_year', version: 3, topic: 'per_year', lagRecords: 0, rebuilding: null },
          {
            view: 'top',
            version: 5,
            topic: 'top',
            lagRecords: 4,
            rebuilding: { version: 9, processed: 120, total: 400 },
          },
        ],
      }),
    );
    expect(text.split('\n').slice(1, 5)).toEqual([
      'VIEW      VERSION  LAG  REBUILD',
      'per_year  3        0    -',
      'top       5        4    version 9 120/400',
      '',
    ]);
  });

  it('derives a missing lag from the offsets and survives junk', () => {
    const view = readStatus({
      partitions: [
        { partition: 4, logEndOffset: 9, serveNodes: [{ url: 'http://s', applied: 6 }] },
        'x',
        null,
      ],
    });
    expect(view.replicas).toEqual([
      expect.objectContaining({ partition: 4, endOffset: 9, node: 'http://s', applied: 6, lag: 3 }),
    ]);
    for (const junk of [null, 42, 'text', { partitions: 'no' }, []]) {
      expect(readStatus(junk)).toEqual({
        clusterId: null,
        lagRecords: null,
        collections: [],
        views: [],
        replicas: [],
        serveNodes: [],
      });
    }
  });
});

describe('rebuild progress', () => {
  const part = (applied: number, logEndOffset: number, state = 'tailing') => ({
    topic: 'books',
    partition: 0,
    applied,
    logEndOffset,
    lag: logEndOffset - applied,
    state,
  });

  it('counts each topic-partition apart, so one collection does not hide another', () => {
    const before = readRebuildProgress({
      ready: true,
      partitions: [part(40, 40), { ...part(7, 7), topic: 'users' }],
    });
    expect(before).toMatchObject({ applied: 47, total: 47, caughtUp: true });
    expect(before.ends).toEqual(
      new Map([
        ['books/0', 40],
        ['users/0', 7],
      ]),
    );
  });

  it('is caught up only when every lag is 0 and the node is ready', () => {
    expect(
      readRebuildProgress({ ready: true, partitions: [part(5, 5), part(3, 3)] }),
    ).toMatchObject({
      applied: 8,
      total: 8,
      caughtUp: true,
      errors: [],
    });
    expect(
      readRebuildProgress({ ready: true, partitions: [part(5, 5), part(1, 3)] }).caughtUp,
    ).toBe(false);
    // Just after the request the old stores still show lag 0, but the node is not ready.
    expect(readRebuildProgress({ ready: false, partitions: [part(5, 5)] }).caughtUp).toBe(false);
    // While the stores are swapped there are no partitions at all.
    expect(readRebuildProgress({ ready: true, partitions: [] }).caughtUp).toBe(false);
  });

  it('sizes the total from end offsets known earlier, so a partition not read yet does not shrink it', () => {
    const before = readRebuildProgress({
      ready: true,
      partitions: [{ ...part(40, 40), partition: 1 }],
    });
    const early = readRebuildProgress(
      { ready: false, partitions: [{ ...part(0, 0, 'rebuilding'), partition: 1 }] },
      before.ends,
    );
    expect(early).toMatchObject({ applied: 0, total: 40, caughtUp: false });
  });

  it('without a ready field, asks every partition to be tailing; reports partition errors', () => {
    expect(readRebuildProgress({ partitions: [part(5, 5, 'rebuilding')] }).caughtUp).toBe(false);
    expect(readRebuildProgress({ partitions: [part(5, 5)] }).caughtUp).toBe(true);
    const failing = readRebuildProgress({
      partitions: [{ ...part(0, 9, 'replaying'), error: 'log down' }],
    });
    expect(failing).toMatchObject({
      applied: 0,
      total: 9,
      caughtUp: false,
      errors: ['books partition 0: log down'],
    });
  });
});
