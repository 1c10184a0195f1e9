import { useInfiniteQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../lib/api';

export interface AuditFilters {
  actor: string;
  action: string;
  targetKind: string;
  targetName: string;
}

export const PAGE = 100;

/** The audit log, newest first, a page at a time (continue tokens), for Admins. */
export function useAudit(f: AuditFilters, enabled: boolean) {
  const query = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== '')) as Partial<AuditFilters>;
  return useInfiniteQuery({
    queryKey: ['audit', query],
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/v1/audit', { params: { query: { ...query, limit: String(PAGE), ...(pageParam ? { continue: pageParam } : {}) } } })),
    initialPageParam: '',
    getNextPageParam: (last) => last.continue || undefined,
    enabled,
  });
}
