// OIDC sign-in: the authorization-code flow with PKCE (S256), a state and a nonce, all through
// oauth4webapi (a maintained, audited implementation; no hand-written crypto). The manager names
// the issuer and the public client id (GET /api/v1/ui/config); the endpoints come from the
// issuer's discovery document. The ID token the flow returns is the session's Bearer token.
import * as oauth from 'oauth4webapi';
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

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  const opts = url.protocol === 'http:' && isLoopback(url) ? { [oauth.allowInsecureRequests]: true } : {};
  const res = await oauth.discoveryRequest(url, { algorithm: 'oidc', ...opts });
  return oauth.processDiscoveryResponse(url, res);
}

/** Starts sign-in: remembers the PKCE verifier, state and nonce for this tab, then leaves for the issuer. */
export async function startOidcLogin(cfg: OidcConfig, returnUrl: string, go: (url: string) => void = (u) => window.location.assign(u)): Promise<void> {
  const as = await discover(cfg.issuer);
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
 * as the session's token. Resolves to where sign-in started. The code leaves the address first.
 */
export async function finishOidcLogin(current: URL): Promise<string> {
  window.history.replaceState(window.history.state, '', CALLBACK_PATH);
  const raw = window.sessionStorage.getItem(KEY);
  window.sessionStorage.removeItem(KEY);
  if (!raw) throw new Error('no sign-in was started in this tab (or it finished already): start again');
  const p = JSON.parse(raw) as Pending;
  const as = await discover(p.issuer);
  const client: oauth.Client = { client_id: p.clientId };
  const params = oauth.validateAuthResponse(as, client, current, p.state);
  const url = new URL(p.issuer);
  const opts = url.protocol === 'http:' && isLoopback(url) ? { [oauth.allowInsecureRequests]: true } : {};
  const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri(), p.verifier, opts);
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, res, { expectedNonce: p.nonce, requireIdToken: true });
  if (!tokens.id_token) throw new Error('the issuer returned no ID token');
  setToken(tokens.id_token);
  return p.returnUrl;
}

/** A readable message for what oauth4webapi throws (an OAuth error body, a failed check). */
export function oidcErrorMessage(err: unknown): string {
  if (err instanceof oauth.AuthorizationResponseError) {
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  }
  if (err instanceof oauth.ResponseBodyError) {
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}
