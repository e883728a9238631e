// Proves which thread a serve-node's read pool (serve-node/read-pool-client.ts) sends a read to:
// key reads and short scans in key order to the reader on the HTTP thread, a filtered, sorted or
// long scan and every search to a read thread, and everything to the read threads when there is
// no reader here.
import { describe, expect, it } from 'vitest';
import { ReadPoolClient } from '../../serve-node/read-pool-client.js';
import type { ScanOptions, ServeClient } from '../../shared/serve-api.js';

/** A serve client that answers empty reads and records, in `log`, that it was asked. */
function recorder(name: string, log: string[]): ServeClient {
  const answer = async <T>(value: T) => {
    log.push(name);
    return value;
  };
  const refuse = () => Promise.reject(new Error(`${name} holds no status`));
  return {
    get: () => answer({ doc: null, applied: {} }),
    scan: () => answer({ items: [], more: false, applied: {} }),
    search: () => answer({ hits: [], total: 0, applied: {} } as never),
    countDocuments: () => answer(0),
    storeBytes: () => answer([]),
    status: refuse,
    ready: async () => true,
    rebuild: refuse,
    snapshot: refuse,
  };
}

const SCAN_HERE_LIMIT_MAX = 100;

function poolOf(log: string[], limitMax = SCAN_HERE_LIMIT_MAX): ReadPoolClient {
  const here = recorder('here', log);
  return new ReadPoolClient([recorder('thread', log)], recorder('applier', log), here, limitMax);
}

async function scannedOn(options: ScanOptions, limitMax = SCAN_HERE_LIMIT_MAX): Promise<string> {
  const log: string[] = [];
  await poolOf(log, limitMax).scan('c', options);
  return log.join(',');
}

describe('the read pool', () => {
  it('answers key reads and short scans in key order on the HTTP thread', async () => {
    const log: string[] = [];
    const pool = poolOf(log);
    await pool.get('c', 'k');
    await pool.search('c', { q: 'word' });
    expect(log).toEqual(['here', 'thread']);
    expect(await scannedOn({ limit: 20, prefix: 'k' })).toBe('here');
    expect(await scannedOn({ limit: SCAN_HERE_LIMIT_MAX })).toBe('here');
  });

  it('sends long, filtered and sorted scans, and scans of no limit, to a read thread', async () => {
    expect(await scannedOn({ limit: SCAN_HERE_LIMIT_MAX + 1 })).toBe('thread');
    expect(await scannedOn({ limit: 20, filter: 'n = 1' })).toBe('thread');
    expect(await scannedOn({ limit: 20, sort: 'n:desc' })).toBe('thread');
    expect(await scannedOn({})).toBe('thread');
    expect(await scannedOn({ limit: 1 }, 0)).toBe('thread');
  });

  it('without a reader here, sends every read to the read threads', async () => {
    const log: string[] = [];
    const pool = new ReadPoolClient([recorder('thread', log)], recorder('applier', log));
    await pool.get('c', 'k');
    await pool.scan('c', { limit: 1 });
    expect(log).toEqual(['thread', 'thread']);
  });
});
