import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../lib/api';
import { can, meFrom, type Action, type Me } from '../lib/roles';
import { useToken } from '../lib/session';

/** The signed-in identity (GET /api/v1/whoami), undefined while loading or signed out. */
export function useMe(): { me: Me | undefined; error: Error | null; isLoading: boolean } {
  const token = useToken();
  const q = useQuery({
    queryKey: ['whoami', token],
    queryFn: () => unwrap(api.GET('/api/v1/whoami')),
    enabled: !!token,
    staleTime: 5 * 60_000,
  });
  return { me: q.data ? meFrom(q.data) : undefined, error: q.error, isLoading: q.isLoading };
}

/** Whether the signed-in identity may do action: the button exists only when true. */
export function useCan(action: Action): boolean {
  return can(useMe().me, action);
}
