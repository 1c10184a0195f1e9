import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../lib/api';
import { readAll } from '../../lib/paging';

export function useCrds(group: string) {
  return useQuery({
    queryKey: ['crds', group],
    queryFn: () =>
      readAll((cont) =>
        unwrap(api.GET('/api/v1/crds', { params: { query: { limit: '1000', ...(group ? { group } : {}), ...(cont ? { continue: cont } : {}) } } })),
      ),
  });
}

export function useCrd(name: string) {
  return useQuery({
    queryKey: ['crd', name],
    queryFn: () => unwrap(api.GET('/api/v1/crds/{name}', { params: { path: { name } } })),
  });
}

export interface Pair {
  from: string;
  to: string;
  /** Set when both versions are one operator's (the manager then reads that operator's history). */
  operator: string;
}

const opQuery = (operator: string) => (operator ? { operator } : {});

/** The stored definition of the revision version ships. */
export function useRevision(name: string, version: string, operator: string) {
  return useQuery({
    queryKey: ['crd', name, 'revision', version, operator],
    queryFn: () =>
      unwrap(api.GET('/api/v1/crds/{name}/revisions/{version}', { params: { path: { name, version }, query: opQuery(operator) } })),
    enabled: version !== '',
    staleTime: Infinity, // a stored revision never changes
  });
}

/** The checker's changes between the revisions two versions ship. */
export function useDiff(name: string, p: Pair) {
  return useQuery({
    queryKey: ['crd', name, 'diff', p],
    queryFn: () => unwrap(api.GET('/api/v1/crds/{name}/diff', { params: { path: { name }, query: { from: p.from, to: p.to, ...opQuery(p.operator) } } })),
    enabled: p.from !== '' && p.to !== '',
    staleTime: Infinity,
  });
}
