import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../lib/api';

/** GET /api/v1/fleet (one environment, or all), refreshed every 30 s. */
export function useFleet(environment: string) {
  return useQuery({
    queryKey: ['fleet', environment],
    queryFn: () => unwrap(api.GET('/api/v1/fleet', { params: { query: environment ? { environment } : {} } })),
    refetchInterval: 30_000,
  });
}
