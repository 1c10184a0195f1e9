import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { GetQuery } from '../../api/types';
import { api, unwrap } from '../../lib/api';
import { readAll } from '../../lib/paging';

export type ClusterQuery = Pick<GetQuery<'/api/v1/clusters'>, 'environment' | 'health'>;

/** Every cluster matching q (GET /api/v1/clusters, all pages), refreshed every 30 s. */
export function useClusters(q: ClusterQuery) {
  return useQuery({
    queryKey: ['clusters', q],
    queryFn: () =>
      readAll((cont) => unwrap(api.GET('/api/v1/clusters', { params: { query: { ...q, limit: '1000', ...(cont ? { continue: cont } : {}) } } }))),
    refetchInterval: 30_000,
  });
}

export function useCluster(name: string) {
  return useQuery({
    queryKey: ['cluster', name],
    queryFn: () => unwrap(api.GET('/api/v1/clusters/{name}', { params: { path: { name } } })),
    refetchInterval: 30_000,
  });
}

/** Checks the cluster's health now (GET …/health?refresh=true) and keeps the answer. */
export function useCheckCluster(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.GET('/api/v1/clusters/{name}/health', { params: { path: { name }, query: { refresh: 'true' } } })),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['cluster', name] });
      void qc.invalidateQueries({ queryKey: ['clusters'] });
    },
  });
}
