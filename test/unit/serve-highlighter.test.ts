// Proves highlights mark every matching field whatever its name: fields named like properties
// every plain object inherits (constructor, toString, __proto__) are highlighted as any other,
// and the highlights of ordinary fields are the same JSON as ever.
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { columnLayout, DEFAULT_SETTINGS } from '../../serve-node/collection-settings.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import type { FtsTable } from '../../serve-node/fts-table.js';
import { Highlighters } from '../../serve-node/highlighter.js';

const limits = { queryBytesMax: 1024, queryTermsMax: 32 };

/** Every string field searchable: highlights read only a table's settings and column layout. */
const table = {
  settings: DEFAULT_SETTINGS,
  layout: columnLayout(DEFAULT_SETTINGS),
} as Pick<FtsTable, 'settings' | 'layout'> as FtsTable;

let db: Database.Database;
let highlighters: Highlighters;

beforeEach(() => {
  db = new Database(':memory:');
  highlighters = new Highlighters(db);
});

afterEach(() => db.close());

/** The highlights of each document as the JSON a serve-node answers with. */
function mark(texts: string[], q: string): string[] {
  const docs = texts.map((text) => ({ doc: JSON.parse(text) as unknown }));
  return highlighters.mark(table, docs, parseQuery(q, limits)).map((h) => JSON.stringify(h));
}

describe('Highlighters.mark', () => {
  it('highlights fields named after inherited object properties', () => {
    const doc =
      '{"constructor":"zebra crossing","toString":"zebra two","__proto__":"zebra three",' +
      '"hasOwnProperty":"no match","valueOf":"zebra five","title":"zebra four"}';
    expect(mark([doc], 'zebra')).toEqual([
      '{"constructor":"<mark>zebra</mark> crossing","toString":"<mark>zebra</mark> two",' +
        '"__proto__":"<mark>zebra</mark> three","valueOf":"<mark>zebra</mark> five",' +
        '"title":"<mark>zebra</mark> four"}',
    ]);
  });

  it('answers ordinary fields with the same JSON, per hit, in document order', () => {
    const docs = [
      '{"title":"zebra four","body":{"text":"a zebra and a horse"},"tags":["x","zebra"],"n":1}',
      '{"title":"no match"}',
      '{"2":"zebra","1":"zebra"}',
    ];
    expect(mark(docs, 'zebra')).toEqual([
      '{"title":"<mark>zebra</mark> four","body.text":"a <mark>zebra</mark> and a horse",' +
        '"tags":"<mark>zebra</mark>"}',
      '{}',
      '{"1":"<mark>zebra</mark>","2":"<mark>zebra</mark>"}',
    ]);
  });
});
