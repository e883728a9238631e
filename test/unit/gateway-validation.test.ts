// Proves the document check holds for shapes a client may send within documentBytesMax: a very
// wide object (members pushed one at a time, never spread into a call) and deep nesting up to the
// limit, without exhausting the stack.
import { describe, expect, it } from 'vitest';
import { checkDocument } from '../../gateway/validation.js';

describe('checkDocument', () => {
  it('takes an object of 150,000 members', () => {
    const wide = Object.fromEntries(Array.from({ length: 150_000 }, (_, i) => [`k${i}`, i]));
    expect(checkDocument(wide, 'document', 64)).toBe(wide);
  });

  it('refuses nesting past depthMax however deep, and takes it at depthMax', () => {
    const nest = (levels: number) => {
      let value: unknown = 1;
      for (let i = 1; i < levels; i++) value = [value];
      return { a: value };
    };
    expect(() => checkDocument(nest(100_000), 'document', 64)).toThrow(/deeper than 64/);
    expect(checkDocument(nest(63), 'document', 64)).toBeTruthy();
  });
});
