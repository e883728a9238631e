// Proves compose.yaml's `environment:` in list form keeps a value whole: it splits at the first
// '=' only, so a base64 secret ending in '==' (or any value holding '=') reaches the service.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readComposeServices } from '../../bin/compose-services.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tailbase-client-compose-'));

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('compose environment', () => {
  it('list form splits each entry at its first = only', () => {
    const file = path.join(dir, 'compose.yaml');
    fs.writeFileSync(
      file,
      [
        'services:',
        '  gateway:',
        '    command: ["gateway", "--port", "8080"]',
        '    environment:',
        '      - TAILBASE_CLUSTER_SECRET=c2VjcmV0IQ==',
        '      - TAILBASE_API_KEYS=a=b:read',
        '      - TAILBASE_EMPTY=',
        '      - TAILBASE_FROM_ENV=${TB_TEST_SECRET:-x=y}',
        '',
      ].join('\n'),
    );
    const [gateway] = readComposeServices(file, path.join(dir, 'data'), {});
    expect(gateway.env).toEqual({
      TAILBASE_CLUSTER_SECRET: 'c2VjcmV0IQ==',
      TAILBASE_API_KEYS: 'a=b:read',
      TAILBASE_EMPTY: '',
      TAILBASE_FROM_ENV: 'x=y',
    });
  });

  it("runs compose.yaml's default topology only: a profile's services (redpanda) are Docker's", () => {
    const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
    const services = readComposeServices(path.join(root, 'compose.yaml'), path.join(dir, 'c'), {});
    expect(services.map((s) => s.name).sort()).toEqual([
      'gateway',
      'log-1',
      'log-2',
      'log-3',
      'serve-1',
      'serve-2',
    ]);
  });
});
