// Sign-out ends the session on the manager, not only in this tab: DELETE /api/v1/session revokes
// the token, so a copy of it (another tab's storage, a proxy log, a stolen browser profile) stops
// working at once instead of when it expires. Best effort: the token is cleared here first,
// whatever the manager answers or whether it answers at all.
import { api } from '../../lib/api';
import { clearToken, getToken } from '../../lib/session';

/**
 * What the manager did with the token: revoked it; could not (409: a token without an id, such
 * as an older `manager token` or an ID token whose issuer writes no jti; it stays valid until
 * it expires); found it ended already (401: expired, signed out elsewhere); or did not answer.
 */
export type SignOutOutcome = 'revoked' | 'notRevocable' | 'alreadyEnded' | 'failed';

/** Clears the session's token at once and asks the manager to revoke it. */
export async function signOut(): Promise<SignOutOutcome> {
  const token = getToken();
  clearToken();
  if (!token) return 'alreadyEnded';
  try {
    // The token is cleared, so the auth middleware adds none and a 401 ends no session: this
    // request carries the old token itself. keepalive: it completes when the tab closes.
    const { response } = await api.DELETE('/api/v1/session', {
      headers: { Authorization: `Bearer ${token}` },
      keepalive: true,
    });
    switch (response.status) {
      case 204:
        return 'revoked';
      case 409:
        return 'notRevocable';
      case 401:
        return 'alreadyEnded';
      default:
        return 'failed';
    }
  } catch {
    return 'failed';
  }
}
