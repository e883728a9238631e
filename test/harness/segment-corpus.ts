/**
 * A collection loaded into a Replica in many small transactions (so many FTS5 segments), with
 * rewrites and deletes among them, and every answer that could depend on how its segments are
 * laid out: the tests of segment merges and of FTS5's merge settings compare these.
 */
import type { FilterNode } from '../../shared/filter/ast.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import type { Replica } from '../../serve-node/replica.js';
import { ReplicaFeed } from './replica-feed.js';

export const PARTITIONS = [0, 1];
const WORDS = ['apple', 'banana', 'cherry', 'damson', 'elder', 'fig', 'grape'];
export const SETTINGS = { filterable: ['n', 'tag'], sortable: ['n'] };
export const limits = { queryBytesMax: 1024, queryTermsMax: 32 };

/** A deterministic document: a few of WORDS, a number and a tag. */
export function doc(i: number) {
  const words = Array.from(
    { length: 3 + (i % 5) },
    (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length],
  );
  return {
    title: `t${i} ${WORDS[i % WORDS.length]}`,
    body: words.join(' '),
    n: i % 13,
    tag: `g${i % 4}`,
  };
}

/** `docs` documents, `perBatch` a transaction, some keys written twice and some deleted. */
export function load(replica: Replica, docs: number, perBatch: number): ReplicaFeed {
  const feed = new ReplicaFeed(() => replica);
  feed.settings('docs', SETTINGS);
  for (let i = 0; i < docs; i += perBatch) {
    const records: Array<[string, unknown]> = [];
    for (let j = i; j < Math.min(docs, i + perBatch); j++) records.push([`k${j}`, doc(j)]);
    if (i > 0) records.push([`k${i - 1}`, doc(i * 31)], [`k${Math.floor(i / 2)}`, null]);
    feed.apply('docs', (i / perBatch) % PARTITIONS.length, records);
  }
  return feed;
}

const filter: FilterNode = {
  kind: 'compare',
  field: 'n',
  op: '<',
  value: { text: '5', number: 5 },
};

/** Every answer that could depend on the index's segments. */
export function answers(replica: Replica) {
  const { search } = replica;
  return ['apple', 'banana OR fig', '"cherry damson"', 'gr*'].map((q) => {
    const query = parseQuery(q, limits);
    return {
      ranked: search.search('docs', PARTITIONS, query, 1000, 10_000),
      top: search.search('docs', PARTITIONS, query, 5, 10_000),
      filtered: search.search('docs', PARTITIONS, query, 1000, 10_000, { filter, sort: [] }),
      facets: Object.fromEntries(search.facets('docs', PARTITIONS, query, filter, ['tag', 'n'])),
    };
  });
}
