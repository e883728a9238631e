// Proves the scale bench measures what it says: its corpus is a function of seed and index with
// the sizes and word shares the issue asks for, disk bytes land in the right component (at rest
// only once two readings agree, never a figure still moving), memory
// splits into anonymous and mapped, sizes follow the flags, and the chart is log-log.
import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diskUsage, diskUsageAtRest } from '../../bench/disk-usage.js';
import { readMemorySplit } from '../../bench/memory-split.js';
import { renderCurves } from '../../bench/scale-chart.js';
import {
  COMMON_TERM,
  FILTER_CATEGORY,
  midFrequencyTerms,
  scaleDoc,
} from '../../bench/scale-corpus.js';
import { scaleSizes } from '../../bench/scale.js';

const SAMPLE_DOCS = 20_000;

describe('the scale corpus', () => {
  it('makes document i from the seed and i alone', () => {
    const late = scaleDoc(123_456);
    for (let i = 0; i < 100; i++) scaleDoc(i);
    expect(scaleDoc(123_456)).toEqual(late);
    expect(scaleDoc(123_456, 27)).not.toEqual(late);
  });

  it('averages about 770 bytes a document, with its mid words in ~0.5% and its common word in all', () => {
    const words = midFrequencyTerms();
    const holding = new Map(words.map((w) => [w, 0]));
    let bytes = 0;
    let common = 0;
    let filtered = 0;
    for (let i = 0; i < SAMPLE_DOCS; i++) {
      const doc = scaleDoc(i);
      bytes += Buffer.byteLength(JSON.stringify(doc)) + 1;
      const seen = new Set(`${doc.value.title} ${doc.value.body}`.split(' '));
      for (const w of words) if (seen.has(w)) holding.set(w, holding.get(w)! + 1);
      if (seen.has(COMMON_TERM)) common += 1;
      if (doc.value.category === FILTER_CATEGORY) filtered += 1;
    }
    expect(bytes / SAMPLE_DOCS).toBeGreaterThan(730);
    expect(bytes / SAMPLE_DOCS).toBeLessThan(810);
    const meanShare = [...holding.values()].reduce((a, b) => a + b, 0) / words.length / SAMPLE_DOCS;
    expect(meanShare).toBeGreaterThan(0.004);
    expect(meanShare).toBeLessThan(0.006);
    expect(common / SAMPLE_DOCS).toBeGreaterThan(0.99);
    expect(filtered / SAMPLE_DOCS).toBeGreaterThan(0.1);
    expect(filtered / SAMPLE_DOCS).toBeLessThan(0.2);
  });
});

describe('scaleSizes', () => {
  it('runs 10^4 alone quick, up to 10^6 by default and 10^7 when asked', () => {
    expect(scaleSizes(true)).toEqual([1e4]);
    expect(scaleSizes(true, 1e7)).toEqual([1e4]);
    expect(scaleSizes(false)).toEqual([1e4, 1e5, 1e6]);
    expect(scaleSizes(false, 1e7)).toEqual([1e4, 1e5, 1e6, 1e7]);
    expect(scaleSizes(false, 1e7, 1e7)).toEqual([1e7]);
    expect(scaleSizes(false, 1e6, 1e5)).toEqual([1e5, 1e6]);
    expect(scaleSizes(true, 1e7, 1e7)).toEqual([1e4]);
  });
});

describe('diskUsage', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function writeDurable(path: string, bytes: number): void {
    const fd = openSync(path, 'w');
    writeSync(fd, Buffer.alloc(bytes, 1));
    fsyncSync(fd);
    closeSync(fd);
  }

  it('counts allocated bytes of the log, LMDB and SQLite files apart', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-scale-disk-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'log', 'topics', 'c', '0'), { recursive: true });
    mkdirSync(join(dir, 'serve', 'stores-1'), { recursive: true });
    writeDurable(join(dir, 'log', 'topics', 'c', '0', '00000000000000000000.log'), 64 * 1024);
    writeDurable(join(dir, 'serve', 'stores-1', 'docs.mdb'), 128 * 1024);
    writeDurable(join(dir, 'serve', 'stores-1', 'docs.mdb-sync-point'), 8 * 1024);
    writeDurable(join(dir, 'serve', 'stores-1', 'search.sqlite'), 256 * 1024);
    writeDurable(join(dir, 'serve', 'stores-1', 'search.sqlite-wal'), 32 * 1024);
    writeDurable(join(dir, 'serve', 'stores-1', 'unflushed-boot-id'), 40);
    const usage = diskUsage(dir);
    expect(usage.logBytes).toBe(64 * 1024);
    expect(usage.lmdbBytes).toBe(136 * 1024);
    expect(usage.sqliteBytes).toBe(288 * 1024);
    expect(usage.otherBytes).toBeGreaterThan(0);
    expect(usage.totalBytes).toBe(
      usage.logBytes + usage.lmdbBytes + usage.sqliteBytes + usage.otherBytes,
    );
  });

  it('at rest: the bytes once two readings agree, and an error when they never do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-scale-disk-'));
    dirs.push(dir);
    writeDurable(join(dir, 'search.sqlite'), 64 * 1024);
    const polls = { pollMs: 20, pollsMax: 5 };
    expect((await diskUsageAtRest(dir, polls)).sqliteBytes).toBe(64 * 1024);
    // A file that grows by a block between any two readings, as a store still writing.
    let bytes = 64 * 1024;
    const growing = setInterval(() => {
      bytes += 64 * 1024;
      writeDurable(join(dir, 'search.sqlite'), bytes);
    }, 5);
    try {
      await expect(diskUsageAtRest(dir, polls)).rejects.toThrow(/still moving after 5 readings/);
    } finally {
      clearInterval(growing);
    }
  });
});

describe('readMemorySplit', () => {
  it('splits this process resident memory into anonymous and mapped files', () => {
    const held = Buffer.alloc(64 * 1024 * 1024, 1);
    const split = readMemorySplit(process.pid);
    expect(split.anonymousBytes).toBeGreaterThan(held.length);
    // node's own binary and libraries are mapped files.
    expect(split.mappedFileBytes).toBeGreaterThan(0);
  });
});

describe('renderCurves', () => {
  it('draws each measured series on log-log axes and leaves unmeasured points out', () => {
    const svg = renderCurves('t', [
      {
        title: 'load',
        unit: 'docs/s',
        series: [
          {
            label: 'a',
            points: [
              [1e4, 10],
              [1e5, 100],
              [1e6, 1000],
            ],
          },
          {
            label: 'b',
            peer: true,
            points: [
              [1e4, 0],
              [1e5, 50],
            ],
          },
        ],
      },
    ]);
    const lines = [...svg.matchAll(/<polyline points="([^"]+)"/g)].map((m) =>
      m[1].split(' ').map((p) => p.split(',').map(Number)),
    );
    expect(lines).toHaveLength(2);
    const [a, b] = lines;
    // Equal steps in log10 of both x and y: a straight line with evenly spaced points.
    expect(a[1][0] - a[0][0]).toBeCloseTo(a[2][0] - a[1][0], 0);
    expect(a[1][1] - a[0][1]).toBeCloseTo(a[2][1] - a[1][1], 0);
    expect(b).toHaveLength(1);
    expect(svg).toContain('stroke-dasharray');
  });
});
