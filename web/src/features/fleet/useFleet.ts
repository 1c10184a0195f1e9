import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../lib/api';
import { ENVIRONMENTS, type Environment } from './model';

export function isEnvironment(s: string): s is Environment {
  return (ENVIRONMENTS as readonly string[]).includes(s);
}

/** GET /api/v1/fleet (one environment, or all when ""), refreshed every 30 s. */
export function useFleet(environment: Environment | '') {
  return useQuery({
    queryKey: ['fleet', environment],
    queryFn: () => unwrap(api.GET('/api/v1/fleet', { params: { query: environment ? { environment } : {} } })),
    refetchInterval: 30_000,
  });
}
