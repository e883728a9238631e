// `--kafka-tls` reaches a log through TLS and verifies whom it reached: `tailbase start --log
// kafka://localhost:P --kafka-tls --kafka-tls-ca ca.pem` writes and reads through a TLS-terminating
// proxy in front of a log-node's Kafka listener (certificates made by the openssl CLI now), and so
// do serve-node and gateway processes given the same flags; a CA that did not sign the broker's
// certificate, or a certificate that does not name the host the client dialled, is refused at
// once with `log_tls_refused`, never retried as an outage.
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { TailbaseError } from '../../shared/errors.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/embedded.js';
import { freePort } from '../harness/free-port.js';
import { spawnNode, TAILBASE_BIN, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';
import {
  makeTestCertificates,
  opensslAvailable,
  startTlsProxy,
  TLS_SERVER_NAME,
  type TestCertificates,
  type TlsProxy,
} from '../harness/tls-proxy.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 2;
/** A refused handshake fails the first connection; a retry loop would take bootstrapWaitMs. */
const REFUSAL_MS_MAX = 5_000;
const FAILED_START_WAIT_MS_MAX = 30_000;

describe.skipIf(!opensslAvailable())('Kafka over TLS (--kafka-tls)', () => {
  let dir: TempDir;
  let certificates: TestCertificates;
  let proxy: TlsProxy;
  let logNode: SpawnedNode;
  let embedded: SpawnedEmbedded | undefined;

  beforeAll(async () => {
    dir = tempDir('kafka-tls');
    certificates = makeTestCertificates(dir.path);
    const kafkaPort = await freePort();
    proxy = await startTlsProxy(certificates, kafkaPort);
    logNode = await spawnNode('log-node', [
      ...['--data', `${dir.path}/log`, '--port', '0', '--partitions', String(PARTITIONS)],
      ...['--kafka-port', String(kafkaPort)],
      ...[
        '--kafka-advertised-host',
        TLS_SERVER_NAME,
        '--kafka-advertised-port',
        String(proxy.port),
      ],
    ]);
  });
  afterAll(async () => {
    await embedded?.stop();
    await logNode?.stop();
    await proxy?.close();
    dir?.cleanup();
  });

  const broker = () => `${TLS_SERVER_NAME}:${proxy.port}`;

  it('writes and reads through TLS with the private CA given by --kafka-tls-ca', async () => {
    embedded = await spawnEmbedded({
      args: [
        ...['--log', `kafka://${broker()}`, '--kafka-tls', '--kafka-tls-ca', certificates.caFile],
        ...['--kafka-partitions', String(PARTITIONS)],
      ],
    });
    const put = await call(embedded.url, 'PUT', '/v1/collections/notes/docs/n1', {
      text: 'sealed',
    });
    expect(put.status).toBe(200);
    const get = await call(embedded.url, 'GET', '/v1/collections/notes/docs/n1', undefined, {
      'tailbase-token': put.token!,
    });
    expect(get.status).toBe(200);
    expect(get.body).toMatchObject({ key: 'n1', value: { text: 'sealed' } });
    expect(proxy.secureConnections()).toBeGreaterThan(0);
  });

  it('serve-node and gateway processes reach the log through TLS with the same flags', async () => {
    const tlsFlags = ['--kafka-tls', '--kafka-tls-ca', certificates.caFile];
    const kafkaFlags = ['--log', `kafka://${broker()}`, ...tlsFlags];
    const before = proxy.secureConnections();
    const serve = await spawnNode('serve-node', [
      ...['--data', `${dir.path}/serve`, '--port', '0', ...kafkaFlags],
    ]);
    try {
      const gateway = await spawnNode('gateway', [
        ...['--port', '0', '--serve', serve.url, ...kafkaFlags],
      ]);
      try {
        const put = await call(gateway.url, 'PUT', '/v1/collections/notes/docs/n2', { text: 'x' });
        expect(put.status).toBe(200);
        const get = await call(gateway.url, 'GET', '/v1/collections/notes/docs/n2', undefined, {
          'tailbase-token': put.token!,
        });
        expect(get.body).toMatchObject({ key: 'n2', value: { text: 'x' } });
      } finally {
        await gateway.stop();
      }
    } finally {
      await serve.stop();
    }
    // Both processes opened connections of their own, each through the proxy's TLS.
    expect(proxy.secureConnections()).toBeGreaterThanOrEqual(before + 2);
  });

  async function refusal(bootstrap: string, caFile: string): Promise<TailbaseError> {
    const { readFileSync } = await import('node:fs');
    const started = Date.now();
    const error = await KafkaLogClient.connect({
      bootstrap: [bootstrap],
      tls: { ca: readFileSync(caFile, 'utf8') },
    }).then(
      (client) => {
        client.close();
        throw new Error(`connected to ${bootstrap} with a CA that must be refused`);
      },
      (refused: unknown) => refused,
    );
    expect(Date.now() - started).toBeLessThan(REFUSAL_MS_MAX);
    expect(error).toBeInstanceOf(TailbaseError);
    return error as TailbaseError;
  }

  it('refuses a broker whose certificate another CA signed, naming the fix', async () => {
    const error = await refusal(broker(), certificates.otherCaFile);
    expect(error.code).toBe('log_tls_refused');
    expect(error.message).toContain(`the TLS handshake with the Kafka broker at ${broker()}`);
    expect(error.message).toContain('--kafka-tls-ca');
  });

  it('refuses a certificate that does not name the host the client dialled', async () => {
    const error = await refusal(`127.0.0.1:${proxy.port}`, certificates.caFile);
    expect(error.code).toBe('log_tls_refused');
    expect(error.details).toMatchObject({ tlsError: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  });

  it('stops tailbase start with the refusal, the flags given by environment variables', async () => {
    const data = tempDir('kafka-tls-refused');
    try {
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>(
        (resolve) => {
          execFile(
            process.execPath,
            [TAILBASE_BIN, 'start', '--data', data.path, '--port', '0', '--kafka-port', 'off'],
            {
              timeout: FAILED_START_WAIT_MS_MAX,
              env: {
                ...process.env,
                TAILBASE_LOG_LEVEL: 'warn',
                TAILBASE_LOG: `kafka://${broker()}`,
                TAILBASE_KAFKA_TLS: '1',
                TAILBASE_KAFKA_TLS_CA: certificates.otherCaFile,
              },
            },
            (error, _stdout, err) =>
              resolve({ code: error ? (error.code as number) : 0, stderr: err }),
          );
        },
      );
      expect(code).not.toBe(0);
      expect(stderr).toContain('the TLS handshake with the Kafka broker');
    } finally {
      data.cleanup();
    }
  });
});
