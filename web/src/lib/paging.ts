// Reading a whole paged list (limit + continue) for pages that show or join every item.

export interface Page<T> {
  items?: T[];
  continue?: string;
}

/** Follows continue tokens until the list ends (at most maxPages pages, then it says so). */
export async function readAll<T>(page: (cont: string | undefined) => Promise<Page<T>>, maxPages = 100): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const p = await page(cont);
    out.push(...(p.items ?? []));
    if (!p.continue) return out;
    cont = p.continue;
  }
  throw new Error(`the list has more than ${maxPages} pages: narrow it with a filter`);
}
