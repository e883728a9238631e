/**
 * Rule (e)'s search half: every serve-node ends equal to a replay of the log in its search
 * results too, not only its documents. After healing, a replica is rebuilt from the log on a new
 * data directory, and a set of queries made of the written values' words runs on both:
 * - `cluster`: a fresh serve-node per serve-node, hosting the same partitions, tailing the
 *   log-node directly. Each pair is compared on the serve-nodes' own search route: hits (key,
 *   partition, offset, score, the write the value names) in order, and the total, exactly, as
 *   both score with the same partitions' term statistics. Across nodes, the gateway's merged
 *   answer is compared with the merge of the rebuilt replicas' answers (by score, then partition,
 *   then offset, as gateway/search.ts merges): the same hits in the same order with the same
 *   scores, and the sum of their totals.
 * - `embedded`: a second `tailbase start` on a copy of the log directory (the original stays up;
 *   nothing writes once the load has stopped, and the copy must end at the same offsets or the
 *   comparison is refused). One serve-node hosts every partition, so its public search is its
 *   own ranking: compared exactly, the same way.
 */
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../harness/free-port.js';
import type { FinalSearch, LogEntry, SearchAnswer } from './check.js';
import { request, VALUE_WORDS, writeIdOf } from './history.js';
import { ChaosNode, INTERNAL_HEADERS, PARTITIONS, serveNode, type Target } from './nodes.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';

/** Hits compared per query: the serve-nodes' searchLimitMax and the gateway's. */
export const SEARCH_HITS_COMPARED = 100;
/** Write ids whose unique term is searched, per collection, from each end of its log. */
const TERMS_PER_END = 4;
const REPLAY_TIMEOUT_MS = 120_000;
const REQUEST_TIMEOUT_MS = 10_000;
const DATA_DIR_LOCK = /^tailbase\.lock/;

export interface Query {
  collection: string;
  q: string;
}

/** Queries from the written values' words: shared ones (many hits, ranked) and unique terms. */
export function finalQueries(collections: string[], log: LogEntry[], sessions: number): Query[] {
  const queries: Query[] = [];
  for (const collection of collections) {
    const words = ['chaos', ...VALUE_WORDS, `${VALUE_WORDS[0]} OR ${VALUE_WORDS[1]}`];
    words.push(`${VALUE_WORDS[2]} ${VALUE_WORDS[3]}`, `${VALUE_WORDS[4]} -${VALUE_WORDS[5]}`);
    for (let s = 0; s < sessions; s++) words.push(`s${s}`);
    const written = log.filter((e) => e.collection === collection && e.writeId !== null);
    const ends = [...written.slice(0, TERMS_PER_END), ...written.slice(-TERMS_PER_END)];
    for (const entry of ends) words.push(`w${entry.writeId}`);
    for (const q of new Set(words)) queries.push({ collection, q });
  }
  return queries;
}

interface RawHit {
  key: string;
  score: number;
  partition?: number;
  offset?: number;
  json?: string;
  value?: unknown;
}

/** One search; `internal` is a serve-node's own route, else the gateway's public one. */
async function search(url: string, query: Query, internal: boolean): Promise<SearchAnswer> {
  const q = `q=${encodeURIComponent(query.q)}&limit=${SEARCH_HITS_COMPARED}`;
  const route = internal
    ? `/internal/search/${query.collection}?${q}`
    : `/v1/collections/${query.collection}/search?${q}`;
  const headers = internal ? INTERNAL_HEADERS : {};
  const answer = await request(`${url}${route}`, 'GET', undefined, headers, REQUEST_TIMEOUT_MS);
  if (answer.status !== 200) {
    throw new Error(`${url}${route} answered ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  const hits = answer.body.hits as RawHit[];
  return {
    total: answer.body.total,
    hits: hits.map((hit) => ({
      key: hit.key,
      score: hit.score,
      partition: hit.partition ?? null,
      offset: hit.offset ?? null,
      writeId: writeIdOf(hit.json !== undefined ? JSON.parse(hit.json) : hit.value),
    })),
  };
}

/** The gateway's merge of per-node answers (gateway/search.ts): score, partition, offset. */
export function mergeAnswers(answers: SearchAnswer[]): SearchAnswer {
  const hits = answers.flatMap((a) => a.hits);
  hits.sort(
    (a, b) =>
      b.score - a.score ||
      (a.partition ?? 0) - (b.partition ?? 0) ||
      (a.offset ?? 0) - (b.offset ?? 0),
  );
  return {
    hits: hits
      .slice(0, SEARCH_HITS_COMPARED)
      .map((hit) => ({ ...hit, partition: null, offset: null })),
    total: answers.reduce((sum, a) => sum + a.total, 0),
  };
}

async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + REPLAY_TIMEOUT_MS;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`replay: ${what} not reached in time`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The log's end offset of each collection partition, "topic/partition" → end. */
export type LogEnds = Map<string, number>;

/**
 * Whether a serve-node's /internal/status has applied every partition it hosts up to `ends`, and
 * the settings topic (which every serve-node tails) to its end with no re-index left.
 */
async function serveCaughtUp(url: string, ends: LogEnds, hosted: number[]): Promise<boolean> {
  const answer = await request(
    `${url}/internal/status`,
    'GET',
    undefined,
    INTERNAL_HEADERS,
    REQUEST_TIMEOUT_MS,
  );
  const applied = new Map<string, number>();
  for (const p of answer.body.partitions as { topic: string; partition: number; applied: number }[])
    applied.set(`${p.topic}/${p.partition}`, p.applied);
  if ((answer.body.reindexing ?? []).length > 0) return false;
  return [...ends].every(([tp, end]) => {
    const [topic, partition] = [tp.slice(0, tp.lastIndexOf('/')), Number(tp.split('/').at(-1))];
    const needed = topic === SETTINGS_TOPIC || hosted.includes(partition);
    return !needed || (applied.get(tp) ?? -1) >= end;
  });
}

/**
 * Whether a gateway's /v1/status shows exactly `ends` and every replica applied it, with no
 * re-index left on any serve-node.
 */
async function gatewayCaughtUp(url: string, ends: LogEnds): Promise<boolean> {
  const answer = await request(`${url}/v1/status`, 'GET', undefined, {}, REQUEST_TIMEOUT_MS);
  const nodes = answer.body.serveNodes as Array<{ reindexing: unknown[] }>;
  if (nodes.some((node) => node.reindexing.length > 0)) return false;
  const seen = (answer.body.partitions as StatusLike[]).filter((p) =>
    ends.has(`${p.topic}/${p.partition}`),
  );
  if (seen.length !== ends.size) return false;
  for (const p of seen) {
    const end = ends.get(`${p.topic}/${p.partition}`)!;
    if (p.endOffset !== end) {
      throw new Error(
        `the copied log ends ${p.topic}/${p.partition} at ${p.endOffset}, not ${end}`,
      );
    }
    if (!p.replicas.every((r) => r.up && r.lag === 0)) return false;
  }
  return true;
}

/** The end offsets a gateway's /v1/status gives for the partitions of `ends`. */
async function statusEnds(url: string, ends: LogEnds): Promise<LogEnds> {
  const answer = await request(`${url}/v1/status`, 'GET', undefined, {}, REQUEST_TIMEOUT_MS);
  if (answer.status !== 200) throw new Error(`${url}/v1/status answered ${answer.status}`);
  const now: LogEnds = new Map();
  for (const p of answer.body.partitions as StatusLike[]) {
    const tp = `${p.topic}/${p.partition}`;
    if (ends.has(tp)) now.set(tp, p.endOffset);
  }
  return now;
}

interface StatusLike {
  topic: string;
  partition: number;
  endOffset: number;
  replicas: { up: boolean; lag: number | null }[];
}

/** A live replica and one rebuilt from the log, asked the same queries. */
interface Pair {
  name: string;
  live: (q: Query) => Promise<SearchAnswer>;
  rebuilt: (q: Query) => Promise<SearchAnswer>;
}

/** A fresh serve-node per serve-node, and the gateway against the merge of the fresh ones. */
async function clusterPairs(target: Target, ends: LogEnds, fresh: ChaosNode[]): Promise<Pair[]> {
  const pairs: Pair[] = [];
  for (const [i, replica] of target.replicas.entries()) {
    const dir = path.join(target.dataRoot, `replay-serve${i}`);
    const name = `replay-${replica.node.name}`;
    const node = serveNode(name, dir, await freePort(), target.logUrl!, i, false);
    fresh.push(node);
    await node.start();
    await waitFor(() => serveCaughtUp(node.url, ends, replica.partitions), `${name} catch-up`);
    pairs.push({
      name: replica.node.name,
      live: (q) => search(replica.node.url, q, true),
      rebuilt: (q) => search(node.url, q, true),
    });
  }
  const rebuilt = [...fresh];
  pairs.push({
    name: 'gateway (merged)',
    live: (q) => search(target.url, q, false),
    rebuilt: async (q) =>
      mergeAnswers(await Promise.all(rebuilt.map((n) => search(n.url, q, true)))),
  });
  return pairs;
}

/** A second `tailbase start` on a copy of the log directory. */
async function embeddedPairs(target: Target, ends: LogEnds, fresh: ChaosNode[]): Promise<Pair[]> {
  const dir = path.join(target.dataRoot, 'replay');
  // The log's ends again right before the copy: an append the gateway retried for a write
  // whose client gave up may have landed since the runner read them.
  const copied = await statusEnds(target.url, ends);
  fs.cpSync(path.join(target.dataRoot, 'data', 'log'), path.join(dir, 'log'), {
    recursive: true,
    filter: (source) => !DATA_DIR_LOCK.test(path.basename(source)),
  });
  const port = await freePort();
  const node = new ChaosNode('replay-embedded', 'embedded', `http://127.0.0.1:${port}`, [
    ...['--data', dir, '--port', String(port)],
    ...['--kafka-port', String(await freePort()), '--partitions', String(PARTITIONS)],
  ]);
  fresh.push(node);
  await node.start();
  await waitFor(() => gatewayCaughtUp(node.url, copied), `${node.name} catch-up`);
  await waitFor(() => gatewayCaughtUp(target.url, copied), 'the live replica catch-up');
  return [
    {
      name: 'embedded',
      live: (q) => search(target.url, q, false),
      rebuilt: (q) => search(node.url, q, false),
    },
  ];
}

/** Rebuilds replicas from the log and runs `queries` on them and on the live ones. */
export async function compareWithReplay(
  target: Target,
  ends: LogEnds,
  queries: Query[],
  log: (line: string) => void,
): Promise<FinalSearch[]> {
  const fresh: ChaosNode[] = [];
  try {
    const pairs =
      target.kind === 'cluster'
        ? await clusterPairs(target, ends, fresh)
        : await embeddedPairs(target, ends, fresh);
    log(`chaos: replay rebuilt; ${queries.length} queries on ${pairs.length} replicas`);
    const results: FinalSearch[] = [];
    for (const pair of pairs) {
      for (const query of queries) {
        const result: FinalSearch = { replica: pair.name, ...query, live: null, rebuilt: null };
        try {
          result.live = await pair.live(query);
          result.rebuilt = await pair.rebuilt(query);
        } catch (error) {
          result.error = (error as Error).message;
        }
        results.push(result);
      }
    }
    return results;
  } finally {
    for (const node of fresh) await node.stop();
  }
}
