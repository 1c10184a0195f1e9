// make dev's one-time sign-in link, https://HOST/login#ticket=...: the ticket is taken out of
// the URL (history.replaceState) before anything renders, and POSTed to /api/v1/session at once
// for a session token. The fragment never reaches the server, a log or the history.
import { api, unwrap } from '../../lib/api';
import { setToken } from '../../lib/session';

/** Removes a #ticket=... fragment from the address and returns the ticket (null if none). */
export function takeTicket(loc: Location = window.location, hist: History = window.history): string | null {
  if (!loc.hash.startsWith('#')) return null;
  const params = new URLSearchParams(loc.hash.slice(1));
  if (!params.has('ticket')) return null;
  hist.replaceState(hist.state, '', loc.pathname + loc.search);
  const t = params.get('ticket')?.trim();
  return t ? t : null;
}

let pending: Promise<string> | null = null;

/** Exchanges the ticket for a session token and stores it; resolves to the subject. */
export function startTicketExchange(ticket: string): Promise<string> {
  pending = unwrap(api.POST('/api/v1/session', { body: { ticket } })).then((s) => {
    if (!s.token) throw new Error('the manager answered without a session token');
    setToken(s.token);
    return s.subject ?? '';
  });
  // The sign-in page reports the outcome; nothing else waits for it.
  pending.catch(() => undefined);
  return pending;
}

/** The exchange started at load (null when the page had no ticket). */
export function pendingExchange(): Promise<string> | null {
  return pending;
}

/** Forgets the exchange once sign-in has reported its outcome. */
export function clearPendingExchange(): void {
  pending = null;
}
