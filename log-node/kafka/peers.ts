/**
 * The other log-nodes of a cluster that splits the partitions, as Kafka brokers: so this
 * listener's Metadata names every broker and each partition's leader, and a Kafka client
 * bootstrapped on any log-node reaches every partition. A peer is named by its Kafka address
 * (`--kafka-peers`); what it stores is asked of it once (DescribeConfigs of its broker resource,
 * `tailbase.hosted.partitions`) and kept, since a log-node never changes the partitions it hosts.
 * A broker's node id is the lowest partition it hosts (the partitions are split, so ids are
 * unique, and the node hosting partition 0, which hands out producer ids and coordinates groups,
 * is node 0 and the controller).
 */
import { TailbaseError } from '../../shared/errors.js';
import { ApiKey, ErrorCode } from '../../shared/kafka/index.js';
import { BrokerConnection } from '../../shared/kafka-log/broker-connection.js';
import {
  kafkaLogConfig,
  parseBrokerAddress,
  type BrokerAddress,
  type KafkaLogConfig,
  type KafkaSaslPlain,
} from '../../shared/kafka-log/config.js';
import {
  HOSTED_PARTITIONS_CONFIG,
  hostedPartitionsOf,
  logErrorOf,
} from '../../shared/kafka-log/errors.js';
import type { ProducerIdentity } from '../../shared/log-api.js';
import type { Logger } from '../../shared/logger.js';

const RESOURCE_BROKER = 4;

export interface KafkaPeerLimits {
  /** How long asking a peer what it hosts (or forwarding to it) may take. */
  peerAnswerMsMax: number;
  /** After a peer failed to answer, how long before it is asked again (Metadata meanwhile names no leader for its partitions). */
  peerRetryMs: number;
}

export const kafkaPeerDefaults: KafkaPeerLimits = { peerAnswerMsMax: 2_000, peerRetryMs: 1_000 };

export interface PeerBroker {
  nodeId: number;
  host: string;
  port: number;
  hostedPartitions: number[];
}

interface PeerState {
  address: BrokerAddress;
  connection: BrokerConnection | null;
  known: PeerBroker | null;
  asking: Promise<void> | null;
  retryAtMs: number;
}

/** The node id of a log-node that hosts these partitions. */
export function brokerNodeId(hostedPartitions: readonly number[]): number {
  return hostedPartitions.length === 0 ? 0 : Math.min(...hostedPartitions);
}

export class KafkaPeers {
  private readonly peers: PeerState[];
  private readonly config: KafkaLogConfig;

  constructor(
    addresses: readonly string[],
    private readonly options: KafkaPeerLimits & { sasl: KafkaSaslPlain | null; logger: Logger },
  ) {
    this.peers = addresses.map((text) => ({
      address: parseBrokerAddress(text),
      connection: null,
      known: null,
      asking: null,
      retryAtMs: 0,
    }));
    this.config = kafkaLogConfig({
      bootstrap: addresses,
      clientId: 'tailbase-log-node-peer',
      sasl: options.sasl ?? undefined,
      connectTimeoutMs: options.peerAnswerMsMax,
      answerMsMax: options.peerAnswerMsMax,
    });
  }

  /** The peers whose partitions are known, asking (within peerAnswerMsMax) those not yet known. */
  async brokers(): Promise<PeerBroker[]> {
    const now = Date.now();
    await Promise.all(
      this.peers
        .filter((peer) => peer.known === null && peer.retryAtMs <= now)
        .map((peer) => (peer.asking ??= this.ask(peer).finally(() => (peer.asking = null)))),
    );
    return this.peers.flatMap((peer) => (peer.known ? [peer.known] : []));
  }

  /** A producer id from the peer that hosts partition 0, which alone hands them out. */
  async initProducerId(): Promise<ProducerIdentity> {
    const owner = (await this.brokers()).find((peer) => peer.hostedPartitions.includes(0));
    if (owner === undefined) {
      throw new TailbaseError(
        503,
        'partition_not_hosted',
        'the log-node that hosts partition 0 (and hands out producer ids) is not reachable',
      );
    }
    const answer = await this.connection(this.peers.find((p) => p.known === owner)!).request(
      ApiKey.InitProducerId,
      { transactionalId: null, transactionTimeoutMs: 60_000, producerId: -1, producerEpoch: -1 },
      { timeoutMs: this.options.peerAnswerMsMax },
    );
    if (answer.errorCode !== ErrorCode.NONE) throw logErrorOf(answer.errorCode, null);
    return { producerId: Number(answer.producerId), producerEpoch: answer.producerEpoch };
  }

  private async ask(peer: PeerState): Promise<void> {
    try {
      const answer = await this.connection(peer).request(
        ApiKey.DescribeConfigs,
        {
          resources: [
            {
              resourceType: RESOURCE_BROKER,
              resourceName: '',
              configurationKeys: [HOSTED_PARTITIONS_CONFIG],
            },
          ],
        },
        { timeoutMs: this.options.peerAnswerMsMax },
      );
      const value = answer.results[0]?.configs.find((c) => c.name === HOSTED_PARTITIONS_CONFIG);
      const hostedPartitions = hostedPartitionsOf(value?.value);
      if (hostedPartitions.length === 0 || hostedPartitions.some((p) => !Number.isInteger(p))) {
        throw new Error(`it does not say which partitions it hosts (${HOSTED_PARTITIONS_CONFIG})`);
      }
      peer.known = {
        nodeId: brokerNodeId(hostedPartitions),
        host: peer.address.host,
        port: peer.address.port,
        hostedPartitions,
      };
    } catch (error) {
      peer.retryAtMs = Date.now() + this.options.peerRetryMs;
      this.options.logger.warn(
        { peer: `${peer.address.host}:${peer.address.port}`, err: error },
        'Kafka peer did not say what it hosts; its partitions have no leader for now',
      );
    }
  }

  private connection(peer: PeerState): BrokerConnection {
    if (peer.connection === null || !peer.connection.usable) {
      peer.connection = new BrokerConnection(peer.address, this.config);
    }
    return peer.connection;
  }

  close(): void {
    for (const peer of this.peers) peer.connection?.close();
  }
}
