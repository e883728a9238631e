/**
 * A loopback port free right now, for a node whose URL must be known before it starts, or for a
 * URL where nothing listens (a connection to it is refused).
 *
 * The port comes from below the kernel's ephemeral range (ip_local_port_range). The kernel hands
 * out ports in that range to every listen on port 0 and every outgoing connection, and the tests
 * running beside this one start nodes on port 0 all the time: a port from that range, once
 * closed, can go to one of those nodes before the child meant to bind it does, or while a test
 * counts on nothing listening there. Below the range a port is taken only by binding it by
 * number, which tests do only with ports this function gave them (or fixed ones far below).
 */
import fs from 'node:fs';
import net from 'node:net';

/** Linux's default start of the ephemeral range, where /proc does not tell. */
const EPHEMERAL_LOW_DEFAULT = 32_768;
/** The ports picked from: this many below the ephemeral range, never below PICK_LOW_MIN. */
const PICK_RANGE = 12_000;
/** Clear of the fixed ports tests use (compose.yaml's cluster: 7071-7082, 8080, 9191-9193). */
const PICK_LOW_MIN = 10_000;
const PICK_ATTEMPTS_MAX = 100;

export async function freePort(): Promise<number> {
  const high = ephemeralLow() - 1;
  const low = Math.max(PICK_LOW_MIN, high - PICK_RANGE);
  if (high - low < 1_000) throw new Error(`no port range below the ephemeral one (${high + 1})`);
  for (let attempt = 0; attempt < PICK_ATTEMPTS_MAX; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${low} and ${high} in ${PICK_ATTEMPTS_MAX} tries`);
}

function ephemeralLow(): number {
  try {
    const [low] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/);
    const value = Number(low);
    return Number.isInteger(value) && value > 0 ? value : EPHEMERAL_LOW_DEFAULT;
  } catch {
    return EPHEMERAL_LOW_DEFAULT;
  }
}

/** Whether `port` can be listened on at 127.0.0.1 right now (the listener is closed again). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') resolve(false);
      else reject(error);
    });
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
