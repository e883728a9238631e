/**
 * Finding a consumer group's coordinator (FindCoordinator, asked of the brokers in turn) and
 * reading what the group committed (OffsetFetch of every topic, no membership needed). Versions
 * 0-3 of FindCoordinator name one key and answer one broker; v4 takes a list and answers a list:
 * the request carries both forms and the answer is read from whichever its version filled.
 */
import { TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode } from '../kafka/index.js';
import type { BrokerConnection } from './broker-connection.js';
import { ClientPart } from './client-parts.js';
import type { BrokerAddress } from './config.js';
import { logErrorOf } from './errors.js';

/** FindCoordinator's key type of a consumer group (KIP-98). */
const KEY_TYPE_GROUP = 0;

/** Errors that say the coordinator moved or is not ready: look it up again. */
export const COORDINATOR_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
]);

/** One committed offset of a group: its topic-partition, offset and metadata string. */
export interface CommittedOffset {
  topic: string;
  partition: number;
  offset: number;
  metadata: string | null;
}

export class GroupCoordinators extends ClientPart {
  private readonly known = new Map<string, BrokerAddress>();

  /** The broker that coordinates `groupId`. */
  find(groupId: string): Promise<BrokerAddress> {
    return this.metadata.admin(async (connection) => {
      const answer = await connection.request(
        ApiKey.FindCoordinator,
        { key: groupId, keyType: KEY_TYPE_GROUP, coordinatorKeys: [groupId] },
        { timeoutMs: this.config.answerMsMax },
      );
      const found = answer.coordinators.find((c) => c.key === groupId) ?? {
        errorCode: answer.errorCode,
        host: answer.host,
        port: answer.port,
      };
      if (found.errorCode !== ErrorCode.NONE) {
        throw coordinatorError(found.errorCode, `finding the coordinator of group ${groupId}`);
      }
      return { host: found.host, port: found.port };
    });
  }

  /**
   * Runs a short request (OffsetFetch, OffsetCommit) on the coordinator's shared connection. The
   * coordinator found is kept per group, since frontier reads ask every poll; any failure (a
   * coordinator error, a connection lost) forgets it, and the next request finds it again.
   */
  async ask<T>(groupId: string, request: (connection: BrokerConnection) => Promise<T>): Promise<T> {
    let address = this.known.get(groupId);
    try {
      if (address === undefined) {
        address = await this.find(groupId);
        this.known.set(groupId, address);
      }
      return await request(await this.pool.connection(address));
    } catch (error) {
      this.known.delete(groupId);
      throw error;
    }
  }

  /** Every offset the group committed (topics as the log contract names them). */
  committed(groupId: string): Promise<CommittedOffset[]> {
    return this.ask(groupId, (connection) => this.fetchCommitted(connection, groupId));
  }

  private async fetchCommitted(
    connection: BrokerConnection,
    groupId: string,
  ): Promise<CommittedOffset[]> {
    const answer = await connection.request(
      ApiKey.OffsetFetch,
      { groupId, topics: null, groups: [{ groupId, topics: null }] },
      { timeoutMs: this.config.answerMsMax },
    );
    const group = answer.groups.find((g) => g.groupId === groupId);
    const errorCode = group?.errorCode ?? answer.errorCode;
    if (errorCode !== ErrorCode.NONE) {
      throw coordinatorError(errorCode, `reading the offsets group ${groupId} committed`);
    }
    const prefix = this.config.topicPrefix;
    const topics = group?.topics ?? answer.topics;
    return topics
      .filter((t) => t.name.startsWith(prefix))
      .flatMap((t) =>
        t.partitions
          .filter((p) => p.errorCode === ErrorCode.NONE && Number(p.committedOffset) >= 0)
          .map((p) => ({
            topic: t.name.slice(prefix.length),
            partition: p.partitionIndex,
            offset: Number(p.committedOffset),
            metadata: p.metadata,
          })),
      );
  }
}

/** A group API's error code as the log contract's error; coordinator moves are 503s to retry. */
export function coordinatorError(errorCode: number, doing: string): TailbaseError {
  if (COORDINATOR_ERRORS.has(errorCode)) {
    return new TailbaseError(
      503,
      'log_unreachable',
      `${doing}: the group coordinator moved or is not ready (Kafka error ${errorCode})`,
      { kafkaErrorCode: errorCode },
    );
  }
  return logErrorOf(errorCode, doing);
}
