import { afterEach, describe, expect, it, vi } from 'vitest';
import { clearPendingExchange, pendingExchange, startTicketExchange, takeTicket } from './ticket';
import { getToken } from '../../lib/session';
import { json, mockApi } from '../../test/api';

afterEach(() => {
  vi.unstubAllGlobals();
  clearPendingExchange();
});

describe('takeTicket', () => {
  it('takes the ticket out of the address before anything else', () => {
    window.history.replaceState(null, '', '/login?return_url=%2Fx#ticket=abc.def');
    expect(takeTicket()).toBe('abc.def');
    expect(window.location.href).toBe(`${window.location.origin}/login?return_url=%2Fx`);
    expect(window.location.hash).toBe('');
  });
  it('leaves other fragments alone', () => {
    window.history.replaceState(null, '', '/crds/x#section');
    expect(takeTicket()).toBeNull();
    expect(window.location.hash).toBe('#section');
  });
});

describe('startTicketExchange', () => {
  it('POSTs the ticket and keeps the session token', async () => {
    const calls = mockApi({
      'POST /api/v1/session': { token: 'session-jwt', subject: 'dev', roles: ['Admin'], expiresAt: '2026-11-27T00:00:00Z' },
    });
    await expect(startTicketExchange('t-1')).resolves.toBe('dev');
    expect(getToken()).toBe('session-jwt');
    expect(JSON.parse(calls[0]!.body)).toEqual({ ticket: 't-1' });
    expect(calls[0]!.url.search).toBe('');
    expect(pendingExchange()).not.toBeNull();
  });
  it('reports a used ticket with the manager message and keeps no token', async () => {
    mockApi({ 'POST /api/v1/session': () => json({ code: 'unauthorized', message: 'the sign-in ticket was already used' }, 401) });
    await expect(startTicketExchange('t-2')).rejects.toThrow('the sign-in ticket was already used');
    expect(getToken()).toBeNull();
  });
});
