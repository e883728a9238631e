// Proves the token store keeps the last token per gateway URL across store instances (as across
// invocations), replaces its file atomically, survives a corrupt file, and stays bounded.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  normalizeUrl,
  TOKEN_STORE_URLS_MAX,
  TokenStore,
  tokenStorePath,
} from '../../client/token-store.js';

let home: string;
let file: string;

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'tailbase-client-home-'));
  file = tokenStorePath({ TAILBASE_HOME: path.join(home, 'nested') });
});

afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

describe('token store', () => {
  it('keeps the latest token per URL, read back by a new instance', () => {
    new TokenStore(file).set('http://127.0.0.1:8080', 'AAA');
    new TokenStore(file).set('http://127.0.0.1:9090/', 'BBB');
    new TokenStore(file).set('http://127.0.0.1:8080/', 'CCC');
    const store = new TokenStore(file);
    expect(store.get('http://127.0.0.1:8080')).toBe('CCC');
    expect(store.get('http://127.0.0.1:9090')).toBe('BBB');
    expect(store.get('http://127.0.0.1:7070')).toBeUndefined();
    store.set('http://127.0.0.1:8080', undefined);
    expect(new TokenStore(file).get('http://127.0.0.1:8080')).toBeUndefined();
  });

  it('writes under a temporary name and renames: no temporary file is left, the file is private', () => {
    new TokenStore(file).set('http://a:1', 'T');
    expect(fs.readdirSync(path.dirname(file))).toEqual(['tokens.json']);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({
      version: 1,
      tokens: { 'http://a:1': { token: 'T' } },
    });
  });

  it('treats a corrupt or foreign file as empty and replaces it on the next save', () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    for (const junk of [
      '{not json',
      '[]',
      '{"version":99,"tokens":{}}',
      '{"version":1,"tokens":{"u":5}}',
    ]) {
      fs.writeFileSync(file, junk);
      expect(new TokenStore(file).get('http://a:1')).toBeUndefined();
    }
    new TokenStore(file).set('http://a:1', 'T');
    expect(new TokenStore(file).get('http://a:1')).toBe('T');
  });

  it(`keeps at most ${TOKEN_STORE_URLS_MAX} URLs, dropping the oldest`, () => {
    const tokens = Object.fromEntries(
      Array.from({ length: TOKEN_STORE_URLS_MAX }, (_, i) => [
        `http://h:${1000 + i}`,
        { token: `t${i}`, savedAtMs: i },
      ]),
    );
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ version: 1, tokens }));
    const store = new TokenStore(file);
    store.set('http://h:9999', 'newest', TOKEN_STORE_URLS_MAX);
    expect(store.get('http://h:1000')).toBeUndefined();
    expect(store.get('http://h:1001')).toBe('t1');
    expect(store.get('http://h:9999')).toBe('newest');
    const kept = JSON.parse(fs.readFileSync(file, 'utf8')) as { tokens: object };
    expect(Object.keys(kept.tokens)).toHaveLength(TOKEN_STORE_URLS_MAX);
  });

  it('normalizes URLs: case of the host, trailing slashes, default form', () => {
    expect(normalizeUrl('http://LOCALHOST:8080/')).toBe('http://localhost:8080');
    expect(normalizeUrl('https://db.example/base//')).toBe('https://db.example/base');
    expect(tokenStorePath({})).toBe(path.join(os.homedir(), '.tailbase', 'tokens.json'));
  });
});
