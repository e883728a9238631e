/**
 * The connections to each broker: one shared by produce and administrative requests (pipelined,
 * answered in order, so a Produce never waits behind a long poll), and up to
 * fetchConnectionsPerBrokerMax leased one fetch at a time (a Fetch long-polls, holding its
 * connection until it answers). A connection that failed is replaced on next use.
 */
import type { BrokerAddress, KafkaLogConfig } from './config.js';
import { BrokerConnection } from './broker-connection.js';

export class BrokerPool {
  private readonly shared = new Map<string, BrokerConnection>();
  private readonly idleFetch = new Map<string, BrokerConnection[]>();
  private readonly leased = new Map<string, number>();
  private readonly leaseWaiters = new Map<string, (() => void)[]>();
  /** Every fetch connection, leased or idle, so close() ends the long polls too. */
  private readonly fetchConnections = new Set<BrokerConnection>();
  private closed = false;

  constructor(private readonly config: KafkaLogConfig) {}

  /** The broker's shared connection (for Produce, Metadata, ListOffsets and the like). */
  connection(address: BrokerAddress): BrokerConnection {
    const key = keyOf(address);
    let connection = this.shared.get(key);
    if (connection === undefined || !connection.usable) {
      connection = this.open(address);
      this.shared.set(key, connection);
    }
    return connection;
  }

  /** A connection of the broker's own for one fetch; `release` gives it back. */
  async lease(address: BrokerAddress): Promise<BrokerConnection> {
    const key = keyOf(address);
    for (;;) {
      const idle = this.idleFetch.get(key) ?? [];
      while (idle.length > 0) {
        const connection = idle.pop()!;
        if (connection.usable) return connection;
        this.fetchConnections.delete(connection);
        this.leased.set(key, (this.leased.get(key) ?? 1) - 1);
      }
      const leased = this.leased.get(key) ?? 0;
      if (leased < this.config.fetchConnectionsPerBrokerMax) {
        this.leased.set(key, leased + 1);
        const connection = this.open(address);
        this.fetchConnections.add(connection);
        return connection;
      }
      await new Promise<void>((resolve) => {
        const waiters = this.leaseWaiters.get(key) ?? [];
        waiters.push(resolve);
        this.leaseWaiters.set(key, waiters);
      });
    }
  }

  release(connection: BrokerConnection): void {
    const key = keyOf(connection.address);
    if (connection.usable && !this.closed) {
      const idle = this.idleFetch.get(key) ?? [];
      idle.push(connection);
      this.idleFetch.set(key, idle);
    } else {
      this.fetchConnections.delete(connection);
      this.leased.set(key, (this.leased.get(key) ?? 1) - 1);
    }
    this.leaseWaiters.get(key)?.shift()?.();
  }

  private open(address: BrokerAddress): BrokerConnection {
    if (this.closed) throw new Error('the Kafka log client is closed');
    return new BrokerConnection(address, this.config);
  }

  close(): void {
    this.closed = true;
    for (const connection of this.shared.values()) connection.close();
    for (const connection of this.fetchConnections) connection.close();
    this.fetchConnections.clear();
    this.shared.clear();
    this.idleFetch.clear();
  }
}

function keyOf(address: BrokerAddress): string {
  return `${address.host}:${address.port}`;
}
