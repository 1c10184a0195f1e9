import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { App } from '../../app/App';
import { setUnauthorizedHandler } from '../../lib/api';
import { newQueryClient } from '../../lib/queryClient';
import { getToken, setToken } from '../../lib/session';
import { json, mockApi } from '../../test/api';
import { signOut } from './signOut';

afterEach(() => vi.unstubAllGlobals());

const noContent = () => new Response(null, { status: 204 });

describe('signOut', () => {
  it('clears the token at once and revokes it on the manager', async () => {
    setToken('tok-1');
    const calls = mockApi({ 'DELETE /api/v1/session': noContent });
    const done = signOut();
    expect(getToken()).toBeNull();
    await expect(done).resolves.toBe('revoked');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.method).toBe('DELETE');
    expect(calls[0]!.headers.get('Authorization')).toBe('Bearer tok-1');
  });

  it('clears the token when the manager cannot be reached', async () => {
    setToken('tok-2');
    vi.stubGlobal('fetch', async () => {
      throw new TypeError('Failed to fetch');
    });
    await expect(signOut()).resolves.toBe('failed');
    expect(getToken()).toBeNull();
  });

  it('clears the token when the manager fails', async () => {
    setToken('tok-3');
    mockApi({ 'DELETE /api/v1/session': () => json({ code: 'Internal', message: 'internal error' }, 500) });
    await expect(signOut()).resolves.toBe('failed');
    expect(getToken()).toBeNull();
  });

  it('reports a token the manager cannot revoke', async () => {
    setToken('tok-legacy');
    mockApi({
      'DELETE /api/v1/session': () =>
        json({ code: 'Conflict', message: 'this token has no id (jti)', details: { reason: 'notRevocable' } }, 409),
    });
    await expect(signOut()).resolves.toBe('notRevocable');
    expect(getToken()).toBeNull();
  });

  it('takes a 401 for a session ended already, not for one to end again', async () => {
    const onUnauthorized = vi.fn();
    setUnauthorizedHandler(onUnauthorized);
    setToken('tok-expired');
    mockApi({
      'DELETE /api/v1/session': () => json({ code: 'Unauthenticated', message: 'this session was signed out' }, 401),
    });
    await expect(signOut()).resolves.toBe('alreadyEnded');
    expect(onUnauthorized).not.toHaveBeenCalled();
    expect(getToken()).toBeNull();
    setUnauthorizedHandler((url) => window.location.assign(url));
  });

  it('sends nothing when signed out already', async () => {
    const calls = mockApi({});
    await expect(signOut()).resolves.toBe('alreadyEnded');
    expect(calls).toHaveLength(0);
  });
});

describe('the Sign out button', () => {
  it('revokes the session on the manager and returns to sign-in', async () => {
    setToken('tok-admin');
    const calls = mockApi({
      'GET /api/v1/whoami': { subject: 'ada', roles: ['Admin'], environments: [] },
      'GET /api/v1/ui/config': { sessionExchange: true },
      'DELETE /api/v1/session': noContent,
    });
    render(<App initialPath="/operators" queryClient={newQueryClient()} />);
    await userEvent.click(await screen.findByTestId('sign-out'));
    expect(await screen.findByRole('heading', { name: 'Sign in to slipway' })).toBeInTheDocument();
    expect(getToken()).toBeNull();
    const del = calls.find((c) => c.method === 'DELETE');
    expect(del?.path).toBe('/api/v1/session');
    expect(del?.headers.get('Authorization')).toBe('Bearer tok-admin');
  });

  it('signs out locally when the manager refuses', async () => {
    setToken('tok-viewer');
    mockApi({
      'GET /api/v1/whoami': { subject: 'vic', roles: ['Viewer'] },
      'GET /api/v1/ui/config': { sessionExchange: true },
      'DELETE /api/v1/session': () => json({ code: 'Internal', message: 'internal error' }, 500),
    });
    render(<App initialPath="/" queryClient={newQueryClient()} />);
    await userEvent.click(await screen.findByTestId('sign-out'));
    expect(await screen.findByRole('heading', { name: 'Sign in to slipway' })).toBeInTheDocument();
    expect(getToken()).toBeNull();
  });
});
