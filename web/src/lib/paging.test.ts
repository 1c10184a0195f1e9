import { describe, expect, it } from 'vitest';
import { readAll } from './paging';

describe('readAll', () => {
  it('follows continue tokens to the end', async () => {
    const pages: Record<string, { items: number[]; continue?: string }> = {
      '': { items: [1, 2], continue: 'a' },
      a: { items: [3], continue: 'b' },
      b: { items: [4] },
    };
    const seen: (string | undefined)[] = [];
    const all = await readAll((c) => {
      seen.push(c);
      return Promise.resolve(pages[c ?? '']!);
    });
    expect(all).toEqual([1, 2, 3, 4]);
    expect(seen).toEqual([undefined, 'a', 'b']);
  });
  it('stops at maxPages with an error', async () => {
    await expect(readAll(() => Promise.resolve({ items: [1], continue: 'x' }), 3)).rejects.toThrow('more than 3 pages');
  });
});
