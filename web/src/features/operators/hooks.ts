import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../../lib/api';
import { readAll } from '../../lib/paging';

/** Every registered operator (GET /api/v1/operators, all pages). */
export function useOperators() {
  return useQuery({
    queryKey: ['operators'],
    queryFn: () =>
      readAll((cont) => unwrap(api.GET('/api/v1/operators', { params: { query: { limit: '1000', ...(cont ? { continue: cont } : {}) } } }))),
  });
}

export function useOperator(name: string) {
  return useQuery({
    queryKey: ['operator', name],
    queryFn: () => unwrap(api.GET('/api/v1/operators/{name}', { params: { path: { name } } })),
  });
}

/** The operator's health on each cluster it runs on. */
export function useOperatorHealth(name: string) {
  return useQuery({
    queryKey: ['operator', name, 'health'],
    queryFn: () => unwrap(api.GET('/api/v1/operators/{name}/health', { params: { path: { name } } })),
    refetchInterval: 30_000,
  });
}

/** POST /api/v1/operators/{name}/refresh: read the chart source now. */
export function useRefreshOperator(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/operators/{name}/refresh', { params: { path: { name } } })),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['operator', name] });
      void qc.invalidateQueries({ queryKey: ['operators'] });
      void qc.invalidateQueries({ queryKey: ['fleet'] });
    },
  });
}
