// Proves isLoopback, which decides whether a node may start without keys or a cluster secret,
// takes only loopback literals and `localhost`: a DNS name that merely starts with `127.` (it can
// resolve to any address) and every public or wildcard address are not loopback.
import { describe, expect, it } from 'vitest';
import { isLoopback } from '../../shared/cli-options.js';

const TABLE: Array<[string, boolean]> = [
  ['127.0.0.1', true],
  ['127.0.0.2', true],
  ['127.255.255.255', true],
  ['::1', true],
  ['[::1]', true],
  ['localhost', true],
  ['127.example.com', false],
  ['127.0.0.1.nip.io', false],
  ['127.', false],
  ['127', false],
  ['127.1', false],
  ['127.0.0.256', false],
  ['128.0.0.1', false],
  ['0.0.0.0', false],
  ['10.0.0.1', false],
  ['::', false],
  ['[::]', false],
  ['::2', false],
  ['[::1', false],
  ['::1]', false],
  ['localhost.example.com', false],
  ['mylocalhost', false],
  ['', false],
];

describe('isLoopback', () => {
  it.each(TABLE)('%s → %s', (host, loopback) => {
    expect(isLoopback(host)).toBe(loopback);
  });
});
