// Filters live in the URL's query, so every filtered view is a deep link and Back works.
import { useCallback, useMemo } from 'react';
import { useSearchParams } from 'react-router';

export type Filters<K extends string> = Record<K, string>;

/**
 * The query parameters keys as strings ("" when absent) and a setter that merges a patch into
 * the URL (an empty value removes the parameter; other parameters stay), replacing the history
 * entry unless push is set.
 */
export function useFilters<K extends string>(keys: readonly K[]): [Filters<K>, (patch: Partial<Filters<K>>, push?: boolean) => void] {
  const [params, setParams] = useSearchParams();
  const values = useMemo(() => {
    const out = {} as Filters<K>;
    for (const k of keys) out[k] = params.get(k) ?? '';
    return out;
    // keys is a constant list at every call site
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [params]);
  const set = useCallback(
    (patch: Partial<Filters<K>>, push = false) => {
      setParams(
        (prev) => {
          const next = new URLSearchParams(prev);
          for (const [k, v] of Object.entries(patch) as [string, string | undefined][]) {
            if (v === undefined || v === '') next.delete(k);
            else next.set(k, v);
          }
          return next;
        },
        { replace: !push },
      );
    },
    [setParams],
  );
  return [values, set];
}
