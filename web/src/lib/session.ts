// The signed-in session: one Bearer token (the manager's JWT) in sessionStorage, so it lives as
// long as the tab and never in a URL, a cookie or a log line. Components read it through
// useToken (useSyncExternalStore), so signing in or out re-renders whoever depends on it.
import { useSyncExternalStore } from 'react';

const KEY = 'slipway.token';
const listeners = new Set<() => void>();

function storage(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage disabled: the session lives only in memory below
  }
}

let memory: string | null = null;

export function getToken(): string | null {
  const s = storage();
  return s ? s.getItem(KEY) : memory;
}

export function setToken(token: string): void {
  const t = token.trim();
  if (t === '') throw new Error('empty token');
  const s = storage();
  if (s) s.setItem(KEY, t);
  else memory = t;
  notify();
}

export function clearToken(): void {
  const s = storage();
  if (s) s.removeItem(KEY);
  memory = null;
  notify();
}

function notify(): void {
  for (const fn of listeners) fn();
}

export function subscribeToken(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The current token (null when signed out); re-renders on sign-in and sign-out. */
export function useToken(): string | null {
  return useSyncExternalStore(subscribeToken, getToken, () => null);
}
