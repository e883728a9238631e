// Proves `tailbase search` asks the gateway for highlights by default and prints the matches
// marked, and that --no-highlight prints the values instead, against a real tailbase.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../unit/client-runner.js';
import { startSystem, type System } from './cli-harness.js';

let system: System;
const cli = (...args: string[]) =>
  runCli([...args, '--url', system.gatewayUrl], { home: system.home });

beforeAll(async () => {
  system = await startSystem(2);
});

afterAll(async () => {
  await system.stop();
});

describe('tailbase search', () => {
  it('prints each hit with its matches marked', async () => {
    expect((await cli('put', 'books', 'b1', '{"title":"The quick fox","year":1999}')).code).toBe(0);
    expect((await cli('put', 'books', 'b2', '{"title":"A slow turtle"}')).code).toBe(0);
    const run = await cli('search', 'books', 'fox');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^#\s+SCORE\s+KEY\s+VALUE\n1\s+\S+\s+b1\s+title: The quick \*fox\*\n$/,
    );
    const plain = await cli('search', 'books', 'fox', '--no-highlight');
    expect(plain.stdout).toMatch(
      /VALUE\n1\s+\S+\s+b1\s+\{"title":"The quick fox","year":1999\}\n$/,
    );
    const json = JSON.parse((await cli('search', 'books', 'fox', '--json')).stdout);
    expect(json.hits[0].highlights).toEqual({ title: 'The quick <mark>fox</mark>' });
  });
});
