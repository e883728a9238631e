// Proves the CLI shows a search hit's highlights readably: matches marked with *..* off a
// terminal and bold with colour on one, fields joined on one line, cut to the column's width
// without cutting a colour escape in half.
import { describe, expect, it } from 'vitest';
import { formatHits } from '../../client/commands/search.js';
import { formatHighlights, markedParts } from '../../client/format.js';

describe('markedParts', () => {
  it('splits a highlighted text into matches and the text around them', () => {
    expect(markedParts('the <mark>quick</mark> brown <mark>fox</mark>')).toEqual([
      { text: 'the ', match: false },
      { text: 'quick', match: true },
      { text: ' brown ', match: false },
      { text: 'fox', match: true },
    ]);
    expect(markedParts('no match')).toEqual([{ text: 'no match', match: false }]);
    expect(markedParts('<mark>open')).toEqual([{ text: 'open', match: true }]);
  });
});

describe('formatHighlights', () => {
  const highlights = {
    title: 'The <mark>fox</mark>',
    body: 'a quick\nbrown <mark>fox</mark> jumps',
  };

  it('marks matches with stars off a terminal, fields on one line', () => {
    expect(formatHighlights(highlights, 100, false)).toBe(
      'title: The *fox* · body: a quick brown *fox* jumps',
    );
  });

  it('marks matches in bold yellow on a terminal', () => {
    expect(formatHighlights({ title: 'The <mark>fox</mark>' }, 100, true)).toBe(
      'title: The \x1b[1;33mfox\x1b[22;39m',
    );
  });

  it('cuts to the width with an ellipsis, counting visible characters only', () => {
    expect(formatHighlights(highlights, 16, false)).toBe('title: The *fo*…');
    const coloured = formatHighlights(highlights, 14, true);
    expect(coloured).toBe('title: The \x1b[1;33mfo\x1b[22;39m…');
    expect(coloured.replace(/\x1b\[[0-9;]*m/g, '')).toHaveLength(14);
  });
});

describe('formatHits', () => {
  it('shows the matching fields when hits carry highlights, the value otherwise', () => {
    const hit = { key: 'b1', score: 1.5, value: { title: 'The fox' }, partition: 0, offset: 0 };
    const marked = formatHits(
      { hits: [{ ...hit, highlights: { title: 'The <mark>fox</mark>' } }], total: 1 } as never,
      0,
      100,
    );
    expect(marked).toBe('#  SCORE  KEY  VALUE\n1  1.50   b1   title: The *fox*\n');
    const plain = formatHits({ hits: [hit], total: 1 } as never, 0, 100);
    expect(plain).toBe('#  SCORE  KEY  VALUE\n1  1.50   b1   {"title":"The fox"}\n');
  });
});
