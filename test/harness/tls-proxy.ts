/**
 * TLS in front of a plain Kafka listener, as a managed cluster's brokers speak it: certificates
 * made at test time with the `openssl` CLI (a CA, a server certificate it signs for `localhost`
 * only, and a second CA that signed nothing here), and a node `tls` server on a loopback port
 * that terminates TLS and pipes each connection to the listener. The listener must advertise
 * `localhost` and the proxy's port, so every connection a client opens comes back through TLS.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';

export interface TestCertificates {
  /** PEM of the CA that signed the server certificate. */
  caFile: string;
  /** PEM of a CA that signed nothing the proxy shows. */
  otherCaFile: string;
  keyFile: string;
  certFile: string;
}

/** The subject alternative names of the server certificate: a name, and no IP address. */
export const TLS_SERVER_NAME = 'localhost';

const OPENSSL_MS_MAX = 30_000;

export function opensslAvailable(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore', timeout: OPENSSL_MS_MAX });
    return true;
  } catch {
    return false;
  }
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', timeout: OPENSSL_MS_MAX });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function makeCa(dir: string, name: string): string {
  openssl(dir, [
    'req',
    '-x509',
    ...EC_KEY,
    ...['-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2'],
    ...['-subj', `/CN=${name}`],
  ]);
  return path.join(dir, `${name}.pem`);
}

export function makeTestCertificates(dir: string): TestCertificates {
  const caFile = makeCa(dir, 'tailbase-test-ca');
  const otherCaFile = makeCa(dir, 'tailbase-other-ca');
  openssl(dir, [
    'req',
    ...EC_KEY,
    ...['-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${TLS_SERVER_NAME}`],
  ]);
  fs.writeFileSync(path.join(dir, 'san.ext'), `subjectAltName=DNS:${TLS_SERVER_NAME}\n`);
  openssl(dir, [
    'x509',
    '-req',
    ...['-in', 'server.csr', '-CA', caFile, '-CAkey', 'tailbase-test-ca.key'],
    ...['-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'san.ext'],
  ]);
  return {
    caFile,
    otherCaFile,
    keyFile: path.join(dir, 'server.key'),
    certFile: path.join(dir, 'server.pem'),
  };
}

export interface TlsProxy {
  port: number;
  /** TLS sessions that completed the handshake. */
  secureConnections(): number;
  close(): Promise<void>;
}

export async function startTlsProxy(
  certificates: TestCertificates,
  listenerPort: number,
): Promise<TlsProxy> {
  const sockets = new Set<net.Socket>();
  let secured = 0;
  const server = tls.createServer(
    {
      key: fs.readFileSync(certificates.keyFile),
      cert: fs.readFileSync(certificates.certFile),
    },
    (client) => {
      secured++;
      const upstream = net.connect({ host: '127.0.0.1', port: listenerPort });
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    },
  );
  // A client that refuses the certificate ends the handshake; that is the test, not a failure.
  server.on('tlsClientError', () => undefined);
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    secureConnections: () => secured,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
