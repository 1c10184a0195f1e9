import { QueryClient } from '@tanstack/react-query';
import { ApiError } from './api';

/** Server state: retried on network errors and 5xx, never on a 4xx the manager meant. */
export function newQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 10_000,
        refetchOnWindowFocus: true,
        retry: (count, err) => !(err instanceof ApiError && err.status < 500) && count < 2,
      },
      mutations: { retry: false },
    },
  });
}
