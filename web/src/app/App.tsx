import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { RouterProvider, createBrowserRouter, createMemoryRouter } from 'react-router';
import { setUnauthorizedHandler } from '../lib/api';
import { newQueryClient } from '../lib/queryClient';
import { routes } from './routes';

/** The cockpit: the router over every page, with server state in react-query. */
export function App({ queryClient, initialPath }: { queryClient?: QueryClient; initialPath?: string }) {
  const [qc] = useState(() => queryClient ?? newQueryClient());
  // initialPath: a memory router (tests); else the browser's address.
  const [router] = useState(() =>
    initialPath !== undefined ? createMemoryRouter(routes, { initialEntries: [initialPath] }) : createBrowserRouter(routes),
  );
  useEffect(() => {
    setUnauthorizedHandler((url) => {
      qc.clear();
      void router.navigate(url, { replace: true });
    });
  }, [qc, router]);
  return (
    <QueryClientProvider client={qc}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  );
}
