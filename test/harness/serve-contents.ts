/**
 * What a serve-node answers about some collections, through the serve contract: every document
 * (with its offset and partition), searches with their scores, totals and facet counts, the
 * applied offsets of every topic-partition it tails and each collection's document count. Two
 * nodes hosting the same partitions of one log, both caught up, answer the same contents when
 * they hold the same replica (invariant 5).
 */
import type { ServeClient } from '../../shared/serve-api.js';

export interface ContentsQuery {
  collection: string;
  q: string;
  facets?: string;
  filter?: string;
}

/** Pages of a scan read to list a collection, at most (a bound on the loop, not the data). */
const SCAN_PAGES_MAX = 1_000;
const SCAN_PAGE_LIMIT = 1_000;

export async function serveContents(
  client: ServeClient,
  collections: readonly string[],
  queries: readonly ContentsQuery[],
): Promise<unknown> {
  const documents: Record<string, unknown[]> = {};
  for (const collection of collections) {
    const items: unknown[] = [];
    let after: string | undefined;
    for (let page = 0; page < SCAN_PAGES_MAX; page++) {
      const answer = await client.scan(collection, { after, limit: SCAN_PAGE_LIMIT });
      items.push(
        ...answer.items.map(({ key, json, offset, partition }) => ({
          key,
          json,
          offset,
          partition,
        })),
      );
      if (!answer.more) break;
      after = answer.items[answer.items.length - 1].key;
    }
    documents[collection] = items;
  }
  const searches = [];
  for (const { collection, ...query } of queries) {
    const answer = await client.search(collection, { ...query, limit: 50 });
    searches.push({
      collection,
      ...query,
      hits: answer.hits.map(({ key, score }) => ({ key, score })),
      total: answer.total,
      facets: answer.facets,
    });
  }
  const status = await client.status();
  const applied = status.partitions
    .map(({ topic, partition, applied }) => `${topic}/${partition}:${applied}`)
    .sort();
  const counts: Record<string, number> = {};
  for (const collection of collections) {
    counts[collection] = await client.countDocuments(collection);
  }
  return { documents, searches, applied, counts };
}
