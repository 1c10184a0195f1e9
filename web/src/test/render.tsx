// Renders the whole app at a path, signed in as a role, for page tests.
import { render } from '@testing-library/react';
import { App } from '../app/App';
import { newQueryClient } from '../lib/queryClient';
import { setToken } from '../lib/session';

export const WHOAMI = {
  Admin: { subject: 'ada', roles: ['Admin'], environments: [] },
  Operator: { subject: 'otto', roles: ['Operator'], environments: [] },
  Viewer: { subject: 'vic', roles: ['Viewer'], environments: [] },
  ProductionOwner: { subject: 'pia', roles: ['EnvironmentOwner'], environments: ['Production'] },
} as const;

/** Renders <App> at path with a token stored (routes must answer GET /api/v1/whoami). */
export function renderApp(path: string) {
  setToken('test-token');
  const qc = newQueryClient();
  qc.setDefaultOptions({ queries: { retry: false, staleTime: Infinity, refetchInterval: false } });
  return { ...render(<App initialPath={path} queryClient={qc} />), queryClient: qc };
}

/** Gives every element a size in jsdom (which lays nothing out), for the virtualised grids. */
export function fakeViewport(width: number, height: number): () => void {
  const proto = HTMLElement.prototype;
  const saved = ['clientWidth', 'clientHeight', 'offsetWidth', 'offsetHeight'].map(
    (k) => [k, Object.getOwnPropertyDescriptor(proto, k)] as const,
  );
  Object.defineProperty(proto, 'clientWidth', { configurable: true, get: () => width });
  Object.defineProperty(proto, 'clientHeight', { configurable: true, get: () => height });
  Object.defineProperty(proto, 'offsetWidth', { configurable: true, get: () => width });
  Object.defineProperty(proto, 'offsetHeight', { configurable: true, get: () => height });
  return () => {
    for (const [k, d] of saved) {
      if (d) Object.defineProperty(proto, k, d);
      else delete (proto as unknown as Record<string, unknown>)[k];
    }
  };
}
