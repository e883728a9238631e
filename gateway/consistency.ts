/**
 * Turns a read's token and `consistency=` into what the serve-nodes must wait for, and the
 * offsets a read was served at back into the token it answers with.
 */
import type { Context } from 'hono';
import type { AppliedOffsets, WaitFor } from '../shared/serve-api.js';
import { mergeTokenOffsets, type TokenOffsets } from '../shared/token.js';
import type { GatewayServices } from './services.js';
import { enumParam, intParam } from './validation.js';

export const TOKEN_HEADER = 'Tailbase-Token';
export const CONSISTENCY_LEVELS = ['token', 'strong', 'eventual'] as const;
export type Consistency = (typeof CONSISTENCY_LEVELS)[number];

/** The request's token (header first, then `token=`); an empty map when it sent none. */
export function requestToken(
  c: Context,
  query: Map<string, string>,
  services: GatewayServices,
): Map<number, number> {
  const text = c.req.header(TOKEN_HEADER) ?? query.get('token');
  return text === undefined || text === '' ? new Map() : services.tokens.decode(text);
}

export interface ReadPlan {
  token: Map<number, number>;
  waitFor: Record<number, number>;
  waitMs: number;
}

export async function planRead(
  c: Context,
  query: Map<string, string>,
  services: GatewayServices,
  partitions: readonly number[],
): Promise<ReadPlan> {
  const { limits } = services.config;
  const token = requestToken(c, query, services);
  const hasToken = c.req.header(TOKEN_HEADER) !== undefined || query.has('token');
  const consistency: Consistency =
    enumParam(query, 'consistency', CONSISTENCY_LEVELS) ?? (hasToken ? 'token' : 'eventual');
  const waitMs = intParam(query, 'wait_ms', 0, limits.waitMsMax, limits.waitMsDefault);
  const waitFor: Record<number, number> = {};
  if (consistency === 'token' || consistency === 'strong') {
    for (const p of partitions) {
      const offset = token.get(p);
      if (offset !== undefined) waitFor[p] = offset;
    }
  }
  if (consistency === 'strong') {
    const wanted = new Set(partitions);
    for (const { partition, endOffset } of await services.log.offsets()) {
      if (wanted.has(partition) && endOffset > 0) {
        waitFor[partition] = Math.max(waitFor[partition] ?? -1, endOffset - 1);
      }
    }
  }
  return { token, waitFor, waitMs };
}

export function waitForPartitions(waitFor: WaitFor, partitions: readonly number[]): WaitFor {
  const subset: Record<number, number> = {};
  for (const p of partitions) if (waitFor[p] !== undefined) subset[p] = waitFor[p];
  return subset;
}

/** The token a read was served at: what the client sent, raised to what the replicas applied. */
export function servedToken(
  sent: TokenOffsets,
  applied: AppliedOffsets,
  partitions: readonly number[],
): Map<number, number> {
  const servedAt = new Map<number, number>();
  for (const p of partitions) {
    const next = applied[String(p)];
    if (next !== undefined && next > 0) servedAt.set(p, next - 1);
  }
  return mergeTokenOffsets(sent, servedAt);
}

/** Copies the applied offsets of `partitions` from one node's answer into a merged answer. */
export function collectApplied(
  into: AppliedOffsets,
  from: AppliedOffsets,
  partitions: readonly number[],
): void {
  for (const p of partitions) {
    const next = from[String(p)];
    if (next !== undefined) into[String(p)] = next;
  }
}
