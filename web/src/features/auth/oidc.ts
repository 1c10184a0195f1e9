// OIDC sign-in: the authorization-code flow with PKCE (S256), a state and a nonce, all through
// oauth4webapi (a maintained, audited implementation; no hand-written crypto). The manager names
// the issuer and the public client id (GET /api/v1/ui/config); the endpoints come from the
// issuer's discovery document. The ID token the flow returns is the session's Bearer token.
// The library loads only when someone signs in this way.
import type * as OAuth from 'oauth4webapi';
import { ApiError, api, unwrap } from '../../lib/api';
import { safeReturnUrl } from '../../lib/returnUrl';
import { setToken } from '../../lib/session';

const KEY = 'slipway.oidc';
export const CALLBACK_PATH = '/login/callback';

export interface OidcConfig {
  issuer: string;
  clientId: string;
  scopes: string[];
}

interface Pending {
  issuer: string;
  clientId: string;
  verifier: string;
  state: string;
  nonce: string;
  returnUrl: string;
}

function redirectUri(): string {
  return window.location.origin + CALLBACK_PATH;
}

/** Plain-HTTP issuers only on this machine (a development identity provider). */
function isLoopback(u: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
}

const lib = () => import('oauth4webapi');

async function discover(oauth: typeof OAuth, issuer: string): Promise<OAuth.AuthorizationServer> {
  const url = new URL(issuer);
  const opts = url.protocol === 'http:' && isLoopback(url) ? { [oauth.allowInsecureRequests]: true } : {};
  const res = await oauth.discoveryRequest(url, { algorithm: 'oidc', ...opts });
  return oauth.processDiscoveryResponse(url, res);
}

/** Starts sign-in: remembers the PKCE verifier, state and nonce for this tab, then leaves for the issuer. */
export async function startOidcLogin(cfg: OidcConfig, returnUrl: string, go: (url: string) => void = (u) => window.location.assign(u)): Promise<void> {
  const oauth = await lib();
  const as = await discover(oauth, cfg.issuer);
  if (!as.authorization_endpoint) throw new Error(`the issuer ${cfg.issuer} names no authorization endpoint`);
  const p: Pending = {
    issuer: cfg.issuer,
    clientId: cfg.clientId,
    verifier: oauth.generateRandomCodeVerifier(),
    state: oauth.generateRandomState(),
    nonce: oauth.generateRandomNonce(),
    returnUrl: safeReturnUrl(returnUrl),
  };
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set('client_id', cfg.clientId);
  url.searchParams.set('redirect_uri', redirectUri());
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', (cfg.scopes.length ? cfg.scopes : ['openid']).join(' '));
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(p.verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', p.state);
  url.searchParams.set('nonce', p.nonce);
  window.sessionStorage.setItem(KEY, JSON.stringify(p));
  go(url.href);
}

/**
 * Finishes sign-in at /login/callback: checks the state, trades the code (with the PKCE
 * verifier) for tokens, checks the ID token's issuer, audience and nonce, and keeps the ID token
 * as the session's token once the manager accepts it with a role (as a pasted token is checked).
 * Resolves to where sign-in started. The code leaves the address first.
 */
export async function finishOidcLogin(current: URL): Promise<string> {
  window.history.replaceState(window.history.state, '', CALLBACK_PATH);
  const raw = window.sessionStorage.getItem(KEY);
  window.sessionStorage.removeItem(KEY);
  if (!raw) throw new Error('no sign-in was started in this tab (or it finished already): start again');
  const p = JSON.parse(raw) as Pending;
  const oauth = await lib();
  const as = await discover(oauth, p.issuer);
  const client: OAuth.Client = { client_id: p.clientId };
  const params = oauth.validateAuthResponse(as, client, current, p.state);
  const url = new URL(p.issuer);
  const opts = url.protocol === 'http:' && isLoopback(url) ? { [oauth.allowInsecureRequests]: true } : {};
  const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri(), p.verifier, opts);
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, res, { expectedNonce: p.nonce, requireIdToken: true });
  if (!tokens.id_token) throw new Error('the issuer returned no ID token');
  await managerAccepts(tokens.id_token, oauth.getValidatedIdTokenClaims(tokens)?.sub ?? 'this user');
  setToken(tokens.id_token);
  return p.returnUrl;
}

/**
 * Asks the manager who the ID token is (GET /api/v1/whoami) before it is kept: a user the issuer
 * knows but slipway gives no role would otherwise land on pages that all refuse them.
 */
async function managerAccepts(idToken: string, subject: string): Promise<void> {
  try {
    await unwrap(api.GET('/api/v1/whoami', { headers: { Authorization: `Bearer ${idToken}` } }));
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) {
      throw new Error(
        `you signed in as ${subject}, who has no role in slipway (Admin, Operator, Viewer or EnvironmentOwner): ask an administrator to grant one`,
      );
    }
    throw new Error(`the manager refused the identity provider's token: ${(err as Error).message}`);
  }
}

/** A readable message for what oauth4webapi throws (an OAuth error body, a failed check). */
export function oidcErrorMessage(err: unknown): string {
  // AuthorizationResponseError and ResponseBodyError carry the OAuth error and its description.
  const e = err as { error?: unknown; error_description?: unknown };
  if (err instanceof Error && typeof e.error === 'string') {
    return `${e.error}${typeof e.error_description === 'string' && e.error_description ? `: ${e.error_description}` : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}
