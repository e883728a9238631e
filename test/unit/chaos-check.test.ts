// The chaos checker on hand-built histories: for each rule, one history that must pass and ones
// that must fail, so a checker that accepts everything (or nothing) is caught here.
import { describe, expect, it } from 'vitest';
import {
  check,
  linearizable,
  type FinalRead,
  type FinalSearch,
  type LogEntry,
  type SearchAnswer,
} from '../chaos/check.js';
import type { FeedEvent, History, Op } from '../chaos/history.js';
import {
  finalDocuments,
  modelAnswer,
  modelQueries,
  queryText,
  type ModelAnswer,
  type ModelSearch,
} from '../chaos/oracle.js';
import { writeValue } from '../chaos/history.js';
import { collectionOffsets, TokenCodec } from '../../shared/token.js';

const codec = new TokenCodec('chaos-check', 4);
/** The token the gateway would give for these partitions' offsets of collection `c`. */
const token = (offsets: Record<number, number>) =>
  codec.encode(collectionOffsets('c', new Map(Object.entries(offsets).map(([p, o]) => [+p, o]))));

/** A small history builder: ops get ids in order; times are given explicitly. */
class H {
  ops: Op[] = [];
  feed: FeedEvent[] = [];
  log: LogEntry[] = [];
  finals: FinalRead[] = [];
  searches: FinalSearch[] = [];
  models: ModelSearch[] = [];
  feedCaughtUp = true;

  op(fields: Partial<Op> & Pick<Op, 'kind' | 'session'>, t0: number, t1: number): Op {
    const op: Op = {
      collection: 'c',
      outcome: 'ok',
      ...fields,
      id: this.ops.length,
      invokeMs: t0,
      completeMs: t1,
    };
    this.ops.push(op);
    return op;
  }
  put(session: number, key: string, writeId: number, offset: number, t0: number, t1: number) {
    return this.op(
      {
        kind: 'put',
        session,
        key,
        writes: [{ writeId, collection: 'c', key, delete: false }],
        partition: 0,
        offset,
      },
      t0,
      t1,
    );
  }
  del(session: number, key: string, writeId: number, offset: number, t0: number, t1: number) {
    return this.op(
      {
        kind: 'delete',
        session,
        key,
        writes: [{ writeId, collection: 'c', key, delete: true }],
        partition: 0,
        offset,
      },
      t0,
      t1,
    );
  }
  read(
    session: number,
    key: string,
    writeId: number | null,
    offset: number | null,
    t0: number,
    tokenSent?: string,
  ) {
    return this.op(
      { kind: 'read', session, key, seen: [{ key, writeId, offset }], tokenSent },
      t0,
      t0 + 1,
    );
  }
  strong(key: string, writeId: number | null, t0: number, t1: number) {
    return this.op(
      { kind: 'strong-read', session: 9, key, seen: [{ key, writeId, offset: null }] },
      t0,
      t1,
    );
  }
  logged(key: string, writeId: number | null, offset: number, partition = 0) {
    this.log.push({ collection: 'c', partition, offset, key, writeId });
  }
  /** The feed delivered the whole log once and the final reads match it. */
  consistentEnd() {
    for (const e of this.log) {
      this.feed.push({ connection: 1, atMs: 0, ...e });
    }
    const last = new Map<string, LogEntry>();
    for (const e of this.log) last.set(e.key, e);
    this.finals = [...last.values()].map((e) => ({
      collection: 'c',
      key: e.key,
      writeId: e.writeId,
      offset: e.writeId === null ? null : e.offset,
    }));
    return this;
  }
  run() {
    const history: History = {
      ops: this.ops,
      feed: this.feed,
      feedConnections: 1,
      feedCaughtUp: this.feedCaughtUp,
    };
    const final = { reads: this.finals, searches: this.searches, modelSearches: this.models };
    return check(history, this.log, final, (t) => codec.decode(t));
  }
  kinds() {
    return this.run().anomalies.map((a) => a.kind);
  }
}

/** Two sessions, a put each, a delete, token reads, strong reads: all consistent. */
function clean(): H {
  const h = new H();
  h.put(0, 'k', 1, 0, 0, 10);
  h.put(1, 'k', 2, 1, 5, 20);
  h.read(0, 'k', 2, 1, 21);
  h.strong('k', 2, 22, 30);
  h.del(1, 'k', 3, 2, 31, 40);
  h.read(1, 'k', null, null, 41);
  h.strong('k', null, 42, 50);
  h.logged('k', 1, 0);
  h.logged('k', 2, 1);
  h.logged('k', null, 2);
  return h;
}

describe('chaos checker', () => {
  it('passes a consistent history', () => {
    const result = clean().consistentEnd().run();
    expect(result.anomalies).toEqual([]);
    expect(result.stats.linearizability.keys).toBe(1);
    expect(result.stats.writes).toEqual({ ok: 3, fail: 0, unknown: 0 });
  });

  describe('(a) no acknowledged write lost', () => {
    it('passes unknown writes that are absent or present once, and refused ones absent', () => {
      const h = clean();
      h.op(
        {
          kind: 'put',
          session: 2,
          key: 'u',
          outcome: 'unknown',
          writes: [{ writeId: 7, collection: 'c', key: 'u', delete: false }],
        },
        50,
        Infinity,
      );
      h.op(
        {
          kind: 'put',
          session: 2,
          key: 'v',
          outcome: 'unknown',
          writes: [{ writeId: 8, collection: 'c', key: 'v', delete: false }],
        },
        51,
        Infinity,
      );
      h.op(
        {
          kind: 'put',
          session: 2,
          key: 'v',
          outcome: 'fail',
          error: '503 log_unavailable',
          writes: [{ writeId: 9, collection: 'c', key: 'v', delete: false }],
        },
        52,
        53,
      );
      h.logged('u', 7, 3);
      expect(h.consistentEnd().kinds()).toEqual([]);
    });

    it('fails an ok write missing from the log', () => {
      const h = clean();
      h.put(0, 'x', 4, 3, 60, 61);
      h.consistentEnd();
      h.finals.push({ collection: 'c', key: 'x', writeId: null, offset: null });
      expect(h.kinds()).toContain('lost');
    });

    it('fails a write in the log twice, a refused write stored, and a write never attempted', () => {
      const h = clean();
      h.put(0, 'x', 4, 3, 60, 61);
      h.op(
        {
          kind: 'put',
          session: 2,
          key: 'y',
          outcome: 'fail',
          error: '400 bad',
          writes: [{ writeId: 5, collection: 'c', key: 'y', delete: false }],
        },
        62,
        63,
      );
      h.logged('x', 4, 3);
      h.logged('x', 4, 4);
      h.logged('y', 5, 5);
      h.logged('z', 77, 6);
      const kinds = h.consistentEnd().kinds();
      expect(kinds).toContain('duplicated');
      expect(kinds).toContain('stored-refused');
      expect(kinds).toContain('phantom');
    });

    it('fails an acknowledged delete whose tombstone is missing', () => {
      const h = clean();
      h.del(0, 'k', 6, 3, 60, 61);
      expect(h.consistentEnd().kinds()).toEqual(expect.arrayContaining(['lost', 'tombstones']));
    });

    it('fails an acknowledged offset the log does not hold the write at', () => {
      const h = new H();
      h.put(0, 'k', 1, 5, 0, 1);
      h.logged('k', 1, 0);
      expect(h.consistentEnd().kinds()).toEqual(['offset-mismatch']);
    });
  });

  describe('(b) read-your-writes and monotonic reads', () => {
    it("fails a token read older than the session's own write", () => {
      const h = new H();
      h.put(1, 'k', 1, 0, 0, 1);
      h.put(0, 'k', 2, 1, 2, 3);
      h.read(0, 'k', 1, 0, 4);
      h.logged('k', 1, 0);
      h.logged('k', 2, 1);
      expect(h.consistentEnd().kinds()).toEqual(['stale-read']);
    });

    it('fails a read older than one the session read before (monotonic reads)', () => {
      const h = new H();
      h.put(1, 'k', 1, 0, 0, 1);
      h.put(1, 'k', 2, 1, 2, 3);
      h.read(0, 'k', 2, 1, 4);
      h.read(0, 'k', 1, 0, 6);
      h.logged('k', 1, 0);
      h.logged('k', 2, 1);
      expect(h.consistentEnd().kinds()).toEqual(['stale-read']);
    });

    it("fails a 404 after the session's own put with no delete after it", () => {
      const h = new H();
      h.put(0, 'k', 1, 0, 0, 1);
      h.read(0, 'k', null, null, 2);
      h.logged('k', 1, 0);
      expect(h.consistentEnd().kinds()).toEqual(['stale-read']);
    });

    it("passes a later write of another session, and a 404 after another session's delete", () => {
      const h = new H();
      h.put(0, 'k', 1, 0, 0, 1);
      h.put(1, 'k', 2, 1, 0, 2);
      h.read(0, 'k', 2, 1, 3);
      h.del(1, 'k', 3, 2, 4, 5);
      h.read(0, 'k', null, null, 6);
      h.logged('k', 1, 0);
      h.logged('k', 2, 1);
      h.logged('k', null, 2);
      expect(h.consistentEnd().kinds()).toEqual([]);
    });

    it('fails a read of a value the log does not hold, and a scan missing its own write', () => {
      const h = new H();
      h.put(0, 'k', 1, 0, 0, 1);
      h.read(0, 'k', 99, 0, 2);
      h.op({ kind: 'scan', session: 0, prefix: 'k', complete: true, seen: [] }, 3, 4);
      h.logged('k', 1, 0);
      const kinds = h.consistentEnd().kinds();
      expect(kinds).toEqual(['read-unknown-value', 'stale-read']);
    });

    it("fails a search at the token that misses the session's own write", () => {
      const h = new H();
      h.put(0, 'k', 1, 0, 0, 1);
      h.op({ kind: 'search', session: 0, term: 1, seen: [] }, 2, 3);
      h.op(
        { kind: 'search', session: 0, term: 1, seen: [{ key: 'k', writeId: 1, offset: null }] },
        4,
        5,
      );
      h.logged('k', 1, 0);
      expect(h.consistentEnd().kinds()).toEqual(['search-missed']);
    });
  });

  describe('(f) every token read reflects what its token promised, whoever wrote it', () => {
    /** Session 1 writes k; session 0 writes j after it and so holds a token covering k's write. */
    const otherWrote = () => {
      const h = new H();
      h.put(1, 'k', 1, 0, 0, 1);
      h.put(0, 'j', 2, 1, 2, 3);
      h.logged('k', 1, 0);
      h.logged('j', 2, 1);
      return h;
    };

    it("fails a token read missing another session's write below its token, which rule (b) passes", () => {
      const h = otherWrote();
      h.read(0, 'k', null, null, 4, token({ 0: 1 }));
      const result = h.consistentEnd().run();
      expect(result.anomalies.map((a) => [a.rule, a.kind])).toEqual([['f', 'token-stale-read']]);
      expect(result.anomalies[0].ops).toEqual([0, 2]);
      expect(result.stats.tokenReads).toEqual({ reads: 1, claims: 1, othersClaims: 1 });
    });

    it('fails a value older than a record at or below the token, and a deleted one', () => {
      const h = otherWrote();
      h.put(1, 'k', 3, 2, 4, 5);
      h.del(1, 'j', 4, 3, 6, 7);
      h.logged('k', 3, 2);
      h.logged('j', null, 3);
      h.read(0, 'k', 1, 0, 8, token({ 0: 2 }));
      h.read(2, 'j', 2, 1, 9, token({ 0: 3 }));
      expect(h.consistentEnd().kinds()).toEqual(['token-stale-read', 'token-stale-read']);
    });

    it('passes reads a later record explains, and partitions the token does not name', () => {
      const h = otherWrote();
      h.del(1, 'k', 3, 2, 4, 5);
      h.put(1, 'q', 4, 0, 6, 7).partition = 1;
      h.logged('k', null, 2);
      h.log.push({ collection: 'c', partition: 1, offset: 0, key: 'q', writeId: 4 });
      // Token at 1: k's put is promised; the delete above it may be seen too.
      h.read(0, 'k', null, null, 8, token({ 0: 1 }));
      h.read(0, 'k', 1, 0, 9, token({ 0: 1 }));
      // q is on partition 1, which the token does not name.
      h.read(0, 'q', null, null, 10, token({ 0: 2 }));
      // Token at 2: the delete is promised, so 404 is right.
      h.read(2, 'k', null, null, 11, token({ 0: 2 }));
      const result = h.consistentEnd().run();
      expect(result.anomalies).toEqual([]);
      expect(result.stats.tokenReads).toEqual({ reads: 4, claims: 3, othersClaims: 2 });
    });

    it('fails a scan missing a key or listing a deleted one in its window, past it passes', () => {
      const h = otherWrote();
      h.put(1, 'k2', 3, 2, 4, 5);
      h.del(1, 'k2', 4, 3, 6, 7);
      h.logged('k2', 3, 2);
      h.logged('k2', null, 3);
      const scan = (seen: Op['seen'], complete: boolean, tokenSent: string, t0: number) =>
        h.op({ kind: 'scan', session: 0, prefix: 'k', complete, seen, tokenSent }, t0, t0 + 1);
      // Complete, token at 3: k missing, k2 listed after its delete.
      scan([{ key: 'k2', writeId: 3, offset: 2 }], true, token({ 0: 3 }), 8);
      // Cut after its first key: k is in the window and listed; k2 is past it.
      scan([{ key: 'k', writeId: 1, offset: 0 }], false, token({ 0: 3 }), 10);
      const kinds = h.consistentEnd().kinds();
      expect(kinds).toEqual(['token-stale-scan', 'token-stale-scan']);
    });

    it("fails a search that misses another session's write below its token, or finds a deleted one", () => {
      const h = otherWrote();
      h.put(1, 'm', 3, 2, 4, 5);
      h.del(1, 'm', 4, 3, 6, 7);
      h.logged('m', 3, 2);
      h.logged('m', null, 3);
      const search = (term: number, seen: Op['seen'], tokenSent: string, t0: number) =>
        h.op({ kind: 'search', session: 2, term, seen, tokenSent }, t0, t0 + 1);
      search(1, [], token({ 0: 1 }), 8);
      search(1, [{ key: 'k', writeId: 1, offset: null }], token({ 0: 1 }), 10);
      // A token older than write 2 promises nothing of it.
      search(2, [], token({ 0: 0 }), 12);
      // m was written again after write 3 (deleted): a miss is no anomaly, a hit at 3 is.
      search(3, [], token({ 0: 2 }), 14);
      search(3, [{ key: 'm', writeId: 3, offset: null }], token({ 0: 3 }), 16);
      const kinds = h.consistentEnd().kinds();
      expect(kinds).toEqual(['token-search-missed', 'token-stale-search']);
    });

    it('fails a token that does not decode', () => {
      const h = otherWrote();
      h.read(0, 'k', 1, 0, 4, new TokenCodec('another-cluster', 4).encode(new Map()));
      expect(h.consistentEnd().kinds()).toEqual(['token-undecodable']);
    });
  });

  describe('(c) strong reads linearizable per key', () => {
    it('fails a strong read that misses a write acknowledged before it began', () => {
      const h = new H();
      h.put(0, 'k', 1, 0, 0, 10);
      h.put(0, 'k', 2, 1, 11, 20);
      h.strong('k', 1, 21, 30);
      h.logged('k', 1, 0);
      h.logged('k', 2, 1);
      expect(h.consistentEnd().kinds()).toEqual(['not-linearizable']);
    });

    it('fails strong reads that see a new value and then the old one', () => {
      const h = new H();
      h.put(0, 'k', 1, 0, 0, 10);
      h.put(1, 'k', 2, 1, 11, 100);
      h.strong('k', 2, 20, 30);
      h.strong('k', 1, 40, 50);
      h.logged('k', 1, 0);
      h.logged('k', 2, 1);
      expect(h.consistentEnd().kinds()).toEqual(['not-linearizable']);
    });

    it('passes concurrent reads that see either value, and an unknown write seen late', () => {
      const h = new H();
      h.put(0, 'k', 1, 0, 0, 10);
      h.put(1, 'k', 2, 1, 11, 100);
      h.strong('k', 1, 20, 30);
      h.strong('k', 2, 40, 50);
      h.strong('k', 2, 110, 120);
      h.op(
        {
          kind: 'put',
          session: 2,
          key: 'k',
          outcome: 'unknown',
          writes: [{ writeId: 3, collection: 'c', key: 'k', delete: false }],
        },
        130,
        Infinity,
      );
      h.strong('k', 2, 140, 150);
      h.strong('k', 3, 500, 510);
      h.logged('k', 1, 0);
      h.logged('k', 2, 1);
      h.logged('k', 3, 2);
      expect(h.consistentEnd().kinds()).toEqual([]);
    });

    it('decides a wide concurrent history and gives up past the state bound', () => {
      const ops = Array.from({ length: 14 }, (_, i) => ({
        id: i,
        call: 0,
        ret: 1000,
        read: false,
        value: i,
        optional: false,
      }));
      ops.push({ id: 14, call: 2000, ret: 2001, read: true, value: 7, optional: false });
      expect(linearizable(ops, 1_000_000)).toBe(true);
      // All 14 writes ended before either read began: the reads must agree.
      ops.push({ id: 15, call: 2002, ret: 2003, read: true, value: 8, optional: false });
      expect(linearizable(ops, 1_000_000)).toBe(false);
      expect(linearizable(ops, 50)).toBe('unknown');
    });
  });

  describe('(d) the change feed', () => {
    it('fails a record delivered twice across a reconnect, and one never delivered', () => {
      const h = clean().consistentEnd();
      h.feed.push({ ...h.feed[1], connection: 2 });
      const twice = h.kinds();
      expect(twice).toEqual(['feed-order']);
      h.feed = h.feed.filter((e) => e.offset !== 2);
      expect(h.kinds()).toEqual(['feed-order', 'feed-missed']);
    });

    it('fails a record the log does not hold, and a consumer that never caught up', () => {
      const h = clean().consistentEnd();
      h.feed.push({
        connection: 1,
        atMs: 0,
        collection: 'c',
        partition: 0,
        offset: 9,
        key: 'k',
        writeId: 2,
      });
      expect(h.kinds()).toEqual(['feed-mismatch']);
      h.feedCaughtUp = false;
      expect(h.kinds()).toEqual(['feed-mismatch', 'feed-stalled']);
    });
  });

  describe('(e) the serve-node equals a replay of the log', () => {
    it('fails a final value that is not the last record of the key', () => {
      const h = clean().consistentEnd();
      h.finals[0] = { collection: 'c', key: 'k', writeId: 2, offset: 1 };
      expect(h.kinds()).toEqual(['final-state']);
    });

    it('fails a key whose final read did not answer', () => {
      const h = clean().consistentEnd();
      h.finals[0] = { collection: 'c', key: 'k', writeId: undefined, offset: null };
      expect(h.kinds()).toEqual(['final-state']);
    });

    /** Two hits of equal rank order by partition then offset, as every serve-node cuts them. */
    const answer = (): SearchAnswer => ({
      total: 2,
      hits: [
        { key: 'a', score: -1.25, partition: 0, offset: 4, writeId: 7 },
        { key: 'b', score: -0.5, partition: 1, offset: 2, writeId: 8 },
      ],
    });
    const compared = (live: SearchAnswer | null, rebuilt: SearchAnswer | null): FinalSearch => ({
      replica: 'serve-node-0',
      collection: 'c',
      q: 'amber',
      live,
      rebuilt,
    });

    it('passes search answers equal to the replay, hit for hit', () => {
      const h = clean().consistentEnd();
      h.searches = [compared(answer(), answer())];
      expect(h.run().anomalies).toEqual([]);
      expect(h.run().stats.finalSearches).toEqual({ queries: 1, hits: 2 });
    });

    it('fails a search answer that differs from the replay in score, order, total or value', () => {
      const h = clean().consistentEnd();
      const score = answer();
      score.hits[1].score = -0.5000001;
      const order = answer();
      order.hits.reverse();
      const total = answer();
      total.total = 3;
      const value = answer();
      value.hits[0].writeId = 6;
      const missing = answer();
      missing.hits.pop();
      h.searches = [score, order, total, value, missing].map((a) => compared(a, answer()));
      h.searches.push({ ...compared(answer(), null), error: 'refused' });
      expect(h.kinds()).toEqual(Array(6).fill('final-search'));
    });
  });

  describe('(e) searches equal a brute-force model of the final documents', () => {
    /** Writes 1-6 by sessions 0-2; k1 is overwritten by write 5 and k3 deleted. */
    const log: LogEntry[] = [
      [1, 'k1'],
      [2, 'k2'],
      [3, 'k3'],
      [4, 'k4'],
      [5, 'k1'],
      [null, 'k3'],
      [6, 'k6'],
    ].map(([writeId, key], offset) => ({
      collection: 'c',
      partition: 0,
      offset,
      key: key as string,
      writeId: writeId as number | null,
    }));
    const sessionOf = (writeId: number) => writeId % 3;
    const docs = finalDocuments(log, 'c', sessionOf);
    const queries = modelQueries('c', docs, 3);
    const words = (writeId: number) =>
      (writeValue(writeId, sessionOf(writeId)).t as string).split(' ');

    it('counts matches, filters and facets by brute force over the last value of each key', () => {
      expect(docs.map((d) => `${d.key}=${d.writeId}`)).toEqual(['k1=5', 'k2=2', 'k4=4', 'k6=6']);
      const chaos = modelAnswer(
        queries.find((q) => queryText(q) === 'chaos')!,
        docs,
      );
      expect(chaos.total).toBe(4);
      expect(chaos.facets).toEqual(
        new Map([
          ['2', 2],
          ['1', 1],
          ['0', 1],
        ]),
      );
      for (const query of queries) {
        const answer = modelAnswer(query, docs);
        for (const doc of docs) {
          const matched = query.groups.some(
            (g) =>
              g.all.every((w) => words(doc.writeId).includes(w)) &&
              !(g.not ?? []).some((w) => words(doc.writeId).includes(w)),
          );
          const passes = query.filter === undefined || query.filter.holds(doc);
          expect(answer.hits.has(doc.key)).toBe(matched && passes);
        }
      }
      const s1 = queries.find((q) => q.filter?.text === 's = 1')!;
      expect([...modelAnswer(s1, docs).hits.keys()]).toEqual(['k4']);
      const notIn = queries.find((q) => q.filter?.text === 'NOT s IN [0, 2]')!;
      expect([...modelAnswer(notIn, docs).hits.keys()]).toEqual(['k4']);
    });

    const compared = (live: ModelAnswer | null): ModelSearch => ({
      collection: 'c',
      q: 'chaos',
      filter: null,
      live,
      model: modelAnswer(queries[0], docs),
    });
    const copy = (): ModelAnswer => {
      const model = modelAnswer(queries[0], docs);
      return { ...model, hits: new Map(model.hits), facets: new Map(model.facets) };
    };

    it('passes answers equal to the model', () => {
      const h = clean().consistentEnd();
      h.models = [compared(copy())];
      expect(h.run().anomalies).toEqual([]);
      expect(h.run().stats.modelSearches).toEqual({ queries: 1, hits: 4, facetCounts: 3 });
    });

    it('fails a key missing or extra, a stale value, a wrong total or facet count, no answer', () => {
      const h = clean().consistentEnd();
      const missing = copy();
      missing.hits.delete('k2');
      const extra = copy();
      extra.hits.set('k3', 3);
      const stale = copy();
      stale.hits.set('k1', 1);
      const total = copy();
      total.total = 5;
      const facet = copy();
      facet.facets.set('2', 3);
      // Cut short (more hits than pages): a key not reached is no anomaly.
      const partial = copy();
      partial.hits.delete('k2');
      partial.complete = false;
      h.models = [missing, extra, stale, total, facet, partial].map(compared);
      h.models.push({ ...compared(null), error: 'refused' });
      expect(h.kinds()).toEqual(Array(6).fill('model-search'));
    });
  });
});
