// Proves the CLI works against a real log-node, serve-node and gateway: each command's output and
// exit codes, and that the token kept between invocations makes `put` then `get` read its own write.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenStore, tokenStorePath } from '../../client/token-store.js';
import { collectionOffsets, TokenCodec } from '../../shared/token.js';
import { runCli } from '../unit/client-runner.js';
import { startSystem, type System } from './cli-harness.js';

let system: System;
const cli = (...args: string[]) =>
  runCli([...args, '--url', system.gatewayUrl], { home: system.home });
const cliWithStdin = (stdin: string, ...args: string[]) =>
  runCli([...args, '--url', system.gatewayUrl], { home: system.home, stdin });

beforeAll(async () => {
  system = await startSystem(4);
});

afterAll(async () => {
  await system?.stop();
});

describe('tailbase client commands', () => {
  it('put then get in separate invocations reads its own write through the stored token', async () => {
    const put = await cli('put', 'users', 'alice', '{"name":"Alice","city":"Paris"}');
    expect(put.stderr).toBe('');
    expect(put.code).toBe(0);
    expect(put.stdout).toMatch(/^put users\/alice at partition \d+ offset \d+\n$/);
    const stored = new TokenStore(tokenStorePath({ TAILBASE_HOME: system.home })).get(
      system.gatewayUrl,
    );
    expect(stored).toMatch(/^[A-Za-z0-9_-]+$/);

    const get = await cli('get', 'users', 'alice');
    expect(get.code).toBe(0);
    expect(JSON.parse(get.stdout)).toEqual({ name: 'Alice', city: 'Paris' });
    expect(get.stdout).toContain('\n  "name": "Alice"');

    const json = await cli('get', 'users', 'alice', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ key: 'alice', value: { name: 'Alice' } });
  });

  it('put reads the document from stdin; del deletes; get of a missing key exits 1 with the message', async () => {
    expect((await cliWithStdin('{"name":"Bob"}\n', 'put', 'users', 'bob')).code).toBe(0);
    expect(JSON.parse((await cli('get', 'users', 'bob')).stdout)).toEqual({ name: 'Bob' });
    const del = await cli('del', 'users', 'bob', '--json');
    expect(del.code).toBe(0);
    expect(JSON.parse(del.stdout)).toMatchObject({ key: 'bob', token: expect.any(String) });
    const missing = await cli('get', 'users', 'bob');
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('no document bob in users (document_not_found');
  });

  it('a stored token of another cluster is dropped with a warning; a --token one is an error', async () => {
    const store = new TokenStore(tokenStorePath({ TAILBASE_HOME: system.home }));
    const foreign = new TokenCodec('another-cluster', 4).encode(
      collectionOffsets('books', new Map([[0, 3]])),
    );
    store.set(system.gatewayUrl, foreign);
    const get = await cli('get', 'users', 'alice');
    expect(get.code).toBe(0);
    expect(get.stderr).toContain('dropped the stored token');
    expect(store.get(system.gatewayUrl)).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(store.get(system.gatewayUrl)).not.toBe(foreign);
    const explicit = await cli('get', 'users', 'alice', '--token', foreign);
    expect(explicit.code).toBe(1);
    expect(explicit.stderr).toContain('(invalid_token');
  });

  it('settings shows a collection settings and merges the JSON given into them', async () => {
    expect((await cli('settings', 'films', '{"searchable":["title"]}', '--replace')).code).toBe(0);
    const merged = await cli('settings', 'films', '{"filterable":["year"]}');
    expect(merged.stderr).toBe('');
    expect(merged.code).toBe(0);
    expect(JSON.parse(merged.stdout).settings).toMatchObject({
      searchable: ['title'],
      filterable: ['year'],
    });
    const shown = await cli('settings', 'films');
    expect(JSON.parse(shown.stdout)).toMatchObject({
      collection: 'films',
      settings: { searchable: ['title'], filterable: ['year'] },
    });
    const unknown = await cli('settings', 'films', '{"colour":"red"}');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown settings: colour');
    expect((await cli('settings', 'films', '[1]')).code).toBe(2);
  });

  it('put, del and bulk with --wait-applied answer once a read without a token sees them', async () => {
    const lines = Array.from({ length: 30 }, (_, i) =>
      JSON.stringify({ key: `w${i}`, value: { text: 'tapir' } }),
    ).join('\n');
    const bulk = await cliWithStdin(lines, 'bulk', 'waited', '--wait-applied', '5000');
    expect(bulk.stderr).not.toContain('tailbase:');
    expect(bulk.code).toBe(0);
    const search = await cli('search', 'waited', 'tapir', '--consistency', 'eventual', '--json');
    expect(JSON.parse(search.stdout).total).toBe(30);
    expect((await cli('put', 'waited', 'one', '{"text":"x"}', '--wait-applied')).code).toBe(0);
    expect((await cli('get', 'waited', 'one', '--consistency', 'eventual')).code).toBe(0);
    expect((await cli('del', 'waited', 'one', '--wait-applied')).code).toBe(0);
    expect((await cli('get', 'waited', 'one', '--consistency', 'eventual')).code).toBe(1);
    expect((await cli('put', 'waited', 'two', '{}', '--wait-applied', 'soon')).code).toBe(2);
  });

  it('collections lists the collections; drop --yes drops one, drop without --yes refuses', async () => {
    expect((await cli('put', 'doomed', 'd1', '{"x":1}', '--wait-applied')).code).toBe(0);
    const listed = await cli('collections');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      /^COLLECTION\s+PARTITIONS\s+RECORDS\s+DOCUMENTS\s+LOG\s+LMDB\s+SQLITE\s+TOTAL\s+SETTINGS VERSION$/m,
    );
    // Bytes in binary units: the log's, LMDB's, SQLite's, their total.
    const bytes = String.raw`\d+(?:\.\d+)? (?:B|KiB|MiB)`;
    expect(listed.stdout).toMatch(
      new RegExp(`^doomed\\s+4\\s+1\\s+1\\s+${bytes}\\s+${bytes}\\s+${bytes}\\s+${bytes}\\s`, 'm'),
    );
    const unsure = await cli('drop', 'doomed');
    expect(unsure.code).toBe(2);
    expect(unsure.stderr).toContain('--yes');
    const dropped = await cli('drop', 'doomed', '--yes');
    expect(dropped.stderr).toBe('');
    expect(dropped.stdout).toBe('dropped doomed\n');
    const json = JSON.parse((await cli('collections', '--json')).stdout) as {
      collection: string;
    }[];
    expect(json.map((c) => c.collection)).not.toContain('doomed');
    const again = await cli('drop', 'doomed', '--yes');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('collection_not_found');
  });

  it('server errors exit 1 with the server message; usage errors exit 2', async () => {
    // Valid JSON the gateway refuses: only the server can say so.
    const deep = `{"a":${'['.repeat(70)}${']'.repeat(70)}}`;
    const tooDeep = await cli('put', 'users', 'k', deep);
    expect(tooDeep.code).toBe(1);
    expect(tooDeep.stderr).toMatch(/^tailbase: .*nests deeper than 64 levels/);
    expect((await cli('put', 'Bad Name', 'k', '{}')).code).toBe(2);
    const badJson = await cli('put', 'users', 'k', '{not json');
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('not JSON');
    expect((await cli('scan', 'users', '--limit', 'zero')).code).toBe(2);
    expect((await cli('get', 'users')).code).toBe(2);
  });

  it('bulk loads NDJSON in chunks, then scan --all follows the cursor and search finds hits', async () => {
    const lines = Array.from({ length: 250 }, (_, i) =>
      JSON.stringify({
        key: `doc-${String(i).padStart(3, '0')}`,
        value: { title: `item ${i}`, body: i % 10 === 0 ? 'special words here' : 'plain' },
      }),
    );
    const file = path.join(system.home, 'docs.ndjson');
    fs.writeFileSync(file, lines.join('\n') + '\n\n');
    const bulk = await cli('bulk', 'items', file, '--chunk-lines', '60', '--json');
    expect(bulk.stderr).toBe('');
    expect(JSON.parse(bulk.stdout)).toMatchObject({ count: 250, requests: 5 });

    const page = await cli('scan', 'items', '--limit', '7', '--json');
    const first = JSON.parse(page.stdout) as { items: { key: string }[]; cursor: string | null };
    expect(first.items.map((i) => i.key)).toEqual(
      Array.from({ length: 7 }, (_, i) => `doc-00${i}`),
    );
    expect(first.cursor).not.toBeNull();

    const all = await cli('scan', 'items', '--all', '--limit', '40', '--json');
    const keys = (JSON.parse(all.stdout) as { items: { key: string }[] }).items.map((i) => i.key);
    expect(keys).toEqual(lines.map((l) => (JSON.parse(l) as { key: string }).key));

    const table = await cli('scan', 'items', '--prefix', 'doc-01', '--limit', '3');
    expect(table.stdout.split('\n')[0]).toMatch(/^KEY\s+OFFSET\s+VALUE$/);
    expect(table.stdout).toContain('doc-010');
    expect(table.stderr).toContain('3 documents; more with --cursor');

    const search = await cli('search', 'items', 'special', '--limit', '5', '--json');
    const result = JSON.parse(search.stdout) as { hits: { key: string }[]; total: number };
    expect(result.total).toBe(25);
    expect(result.hits).toHaveLength(5);
    const human = await cli('search', 'items', 'special', '--limit', '2');
    expect(human.stdout.split('\n')[0]).toMatch(/^#\s+SCORE\s+KEY\s+VALUE$/);
    expect(human.stderr).toContain('2 of 25 hits');
  });

  it('bulk from stdin names the source line of a rejected record and exits 1', async () => {
    const input = '{"key":"a","value":{"n":1}}\n\n{"key":"b","value":{"n":2}}\n{"key":"c"}\n';
    const run = await cliWithStdin(input, 'bulk', 'lines', '-', '--chunk-lines', '2');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('line 4:');
    expect(run.stderr).toContain('2 records before it were written');
  });

  it('status prints each partition with its serve-node applied offset and lag', async () => {
    const status = await cli('status');
    expect(status.code).toBe(0);
    const header = status.stdout.split('\n').find((l) => l.startsWith('TOPIC'));
    expect(header).toMatch(
      /TOPIC\s+PARTITION\s+LOG START\s+LOG END\s+NODE\s+UP\s+APPLIED\s+LAG\s+STATE/,
    );
    for (let p = 0; p < 4; p++)
      expect(status.stdout).toMatch(new RegExp(`^users\\s+${p}\\s+\\d+\\s+\\d+`, 'm'));
    const json = JSON.parse((await cli('status', '--json')).stdout) as {
      partitions: { topic: string }[];
    };
    expect(json.partitions.filter((p) => p.topic === 'users')).toHaveLength(4);
  });

  it('tail prints change events from the start and stops at --limit', async () => {
    const run = await cli(
      'tail',
      '--collection',
      'users',
      '--from',
      'start',
      '--limit',
      '3',
      '--json',
    );
    expect(run.code).toBe(0);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string; value: unknown });
    expect(events.map((e) => e.key).sort()).toEqual(['alice', 'bob', 'bob']);
    expect(events.find((e) => e.key === 'bob' && e.value === null)).toBeDefined();
  });

  it('tail resumes after the gateway restarts, missing nothing and repeating nothing', async () => {
    let seen = 0;
    const tail = runCli(
      [
        'tail',
        '--collection',
        'feed',
        '--from',
        'start',
        '--limit',
        '4',
        '--json',
        '--url',
        system.gatewayUrl,
      ],
      { home: system.home, onStdout: (out) => (seen = out.split('\n').length - 1) },
    );
    tail.catch(() => undefined);
    expect((await cli('put', 'feed', 'one', '{"n":1}')).code).toBe(0);
    expect((await cli('put', 'feed', 'two', '{"n":2}')).code).toBe(0);
    for (let polls = 0; seen < 2 && polls < 200; polls++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(seen).toBe(2);
    await system.restartGateway();
    expect((await cli('put', 'feed', 'three', '{"n":3}')).code).toBe(0);
    expect((await cli('put', 'feed', 'four', '{"n":4}')).code).toBe(0);
    const run = await tail;
    expect(run.code).toBe(0);
    const keys = run.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { key: string }).key);
    expect(keys.sort()).toEqual(['four', 'one', 'three', 'two']);
    expect(run.stderr).toContain('reconnecting');
  });

  /** Runs `tailbase rebuild ...` and checks it returned only once the node had replayed it all. */
  async function expectRebuilt(...args: string[]) {
    const run = await cli('rebuild', ...args, '--poll-ms', '50', '--json');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as { records: number };
    expect(result.records).toBeGreaterThanOrEqual(250);
    const get = await cli('get', 'items', 'doc-042', '--consistency', 'eventual');
    expect(JSON.parse(get.stdout)).toEqual({ title: 'item 42', body: 'plain' });
  }

  it('rebuild wipes the serve-node, replays the log and returns once it has caught up', async () => {
    await expectRebuilt('--serve', system.serveUrl);
  });

  it('rebuild --node goes through the gateway admin API and waits for the same catch-up', async () => {
    await expectRebuilt('--node', '0');
    const missing = await cli('rebuild', '--node', '7', '--json');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('serve_node_not_found');
  });
});
