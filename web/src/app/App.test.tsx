import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { App } from './App';
import { getToken, setToken } from '../lib/session';
import { json, mockApi } from '../test/api';
import { newQueryClient } from '../lib/queryClient';

afterEach(() => vi.unstubAllGlobals());

function renderAt(path: string) {
  return render(<App initialPath={path} queryClient={newQueryClient()} />);
}

describe('App', () => {
  it('sends a signed-out visitor to sign-in with the page to come back to', async () => {
    mockApi({ 'GET /api/v1/ui/config': { sessionExchange: true } });
    renderAt('/clusters?environment=Production');
    expect(await screen.findByRole('heading', { name: 'Sign in to slipway' })).toBeInTheDocument();
  });

  it('shows who is signed in, with the role, and signs out', async () => {
    setToken('tok-admin');
    const calls = mockApi({ 'GET /api/v1/whoami': { subject: 'ada', roles: ['Admin'], environments: [] } });
    renderAt('/operators');
    expect(await screen.findByTestId('user-subject')).toHaveTextContent('ada');
    expect(screen.getByTestId('user-role')).toHaveTextContent('Admin');
    expect(screen.getByTestId('nav-audit')).toBeInTheDocument();
    expect(screen.getByTestId('nav-new-deployment')).toHaveAttribute('href', '/deployments/new');
    expect(calls[0]?.headers.get('Authorization')).toBe('Bearer tok-admin');
    await userEvent.click(screen.getByTestId('sign-out'));
    expect(getToken()).toBeNull();
    expect(await screen.findByRole('heading', { name: 'Sign in to slipway' })).toBeInTheDocument();
  });

  it('shows no Audit link to a Viewer', async () => {
    setToken('tok-viewer');
    mockApi({ 'GET /api/v1/whoami': { subject: 'vic', roles: ['Viewer'] } });
    renderAt('/');
    expect(await screen.findByTestId('user-role')).toHaveTextContent('Viewer');
    expect(screen.queryByTestId('nav-audit')).toBeNull();
    expect(screen.queryByTestId('nav-new-deployment')).toBeNull();
  });

  it('clears the token and returns to sign-in on a 401', async () => {
    setToken('tok-expired');
    mockApi({ 'GET /api/v1/whoami': () => json({ code: 'unauthorized', message: 'token expired' }, 401) });
    renderAt('/crds/widgets.example.com?from=1.0.0&to=2.0.0');
    expect(await screen.findByRole('heading', { name: 'Sign in to slipway' })).toBeInTheDocument();
    await waitFor(() => expect(getToken()).toBeNull());
  });

  it('signs in with a pasted token only after the manager accepts it', async () => {
    const calls = mockApi({
      'GET /api/v1/ui/config': { sessionExchange: true },
      'GET /api/v1/whoami': (req: Request) =>
        req.headers.get('Authorization') === 'Bearer good'
          ? { subject: 'otto', roles: ['Operator'] }
          : json({ message: 'invalid token' }, 401),
    });
    renderAt('/login?return_url=%2Fclusters');
    await userEvent.type(await screen.findByLabelText(/Token/), 'bad');
    await userEvent.click(screen.getByTestId('login-submit'));
    expect(await screen.findByTestId('login-error')).toHaveTextContent('invalid token');
    expect(getToken()).toBeNull();
    await userEvent.clear(screen.getByLabelText(/Token/));
    await userEvent.type(screen.getByLabelText(/Token/), 'good');
    await userEvent.click(screen.getByTestId('login-submit'));
    expect(await screen.findByTestId('user-subject')).toHaveTextContent('otto');
    expect(getToken()).toBe('good');
    expect(calls.filter((c) => c.path === '/api/v1/whoami').length).toBeGreaterThanOrEqual(2);
  });
});
