import { screen, waitFor } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { getToken } from '../../lib/session';
import { json, mockApi } from '../../test/api';
import { WHOAMI, renderApp } from '../../test/render';
import { clearToken } from '../../lib/session';
import { finishOidcLogin, oidcErrorMessage, startOidcLogin } from './oidc';

const issuer = 'https://idp.example';
const cfg = { issuer, clientId: 'slipway-ui', scopes: ['openid', 'profile', 'email'] };
const discovery = {
  issuer,
  authorization_endpoint: `${issuer}/authorize`,
  token_endpoint: `${issuer}/token`,
  jwks_uri: `${issuer}/jwks`,
  response_types_supported: ['code'],
  id_token_signing_alg_values_supported: ['RS256'],
};

const b64url = (s: string | Uint8Array) =>
  btoa(typeof s === 'string' ? s : String.fromCharCode(...s)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** An ID token as the issuer would sign it (the flow checks its claims; TLS vouches for it). */
function idToken(claims: Record<string, unknown>): string {
  const now = Math.floor(Date.now() / 1000);
  const body = { iss: issuer, aud: 'slipway-ui', sub: 'alice', iat: now, exp: now + 3600, ...claims };
  return `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: 'k1' }))}.${b64url(JSON.stringify(body))}.${b64url('signature')}`;
}

function idp(token: (body: URLSearchParams) => unknown) {
  return mockApi({
    'GET /api/v1/ui/config': { oidc: cfg, sessionExchange: true },
    'GET /.well-known/openid-configuration': discovery,
    'POST /token': async (req: Request) => token(new URLSearchParams(await req.text())),
    'GET /api/v1/whoami': WHOAMI.Operator,
    'GET /api/v1/crds': { items: [] },
  });
}

async function start(returnUrl = '/crds?group=example.com'): Promise<URL> {
  let went = '';
  await startOidcLogin(cfg, returnUrl, (u) => {
    went = u;
  });
  return new URL(went);
}

beforeEach(() => window.history.replaceState(null, '', '/login'));
afterEach(() => {
  vi.unstubAllGlobals();
  clearToken();
});

describe('OIDC sign-in', () => {
  it('sends the browser to the issuer with PKCE (S256), state, nonce, scopes and the callback', async () => {
    idp(() => ({}));
    const url = await start();
    expect(url.origin + url.pathname).toBe(`${issuer}/authorize`);
    const q = url.searchParams;
    expect(q.get('client_id')).toBe('slipway-ui');
    expect(q.get('response_type')).toBe('code');
    expect(q.get('redirect_uri')).toBe(`${window.location.origin}/login/callback`);
    expect(q.get('scope')).toBe('openid profile email');
    expect(q.get('code_challenge_method')).toBe('S256');
    const pending = JSON.parse(window.sessionStorage.getItem('slipway.oidc')!) as { verifier: string; state: string; nonce: string };
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(pending.verifier)));
    expect(q.get('code_challenge')).toBe(b64url(digest));
    expect(q.get('state')).toBe(pending.state);
    expect(q.get('nonce')).toBe(pending.nonce);
  });

  it('trades the code with the verifier, keeps the ID token and returns where sign-in started', async () => {
    let sent: URLSearchParams | undefined;
    let nonce = '';
    idp((body) => {
      sent = body;
      return { access_token: 'at', token_type: 'Bearer', expires_in: 3600, id_token: idToken({ nonce }) };
    });
    const url = await start();
    nonce = url.searchParams.get('nonce')!;
    const verifier = (JSON.parse(window.sessionStorage.getItem('slipway.oidc')!) as { verifier: string }).verifier;
    window.history.replaceState(null, '', `/login/callback?code=c-123&state=${url.searchParams.get('state')}`);
    await expect(finishOidcLogin(new URL(window.location.href))).resolves.toBe('/crds?group=example.com');
    expect(window.location.search).toBe(''); // the code left the address
    expect(sent?.get('grant_type')).toBe('authorization_code');
    expect(sent?.get('code')).toBe('c-123');
    expect(sent?.get('code_verifier')).toBe(verifier);
    expect(sent?.get('client_id')).toBe('slipway-ui');
    const payload = JSON.parse(atob(getToken()!.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as { sub: string; nonce: string };
    expect([payload.sub, payload.nonce]).toEqual(['alice', nonce]);
    expect(window.sessionStorage.getItem('slipway.oidc')).toBeNull();
  });

  it('refuses a forged state, a wrong nonce and a second use', async () => {
    idp(() => ({ access_token: 'at', token_type: 'Bearer', id_token: idToken({ nonce: 'not-the-one' }) }));
    let url = await start();
    window.history.replaceState(null, '', '/login/callback?code=c&state=forged');
    await expect(finishOidcLogin(new URL(window.location.href))).rejects.toThrow(/state/);
    expect(getToken()).toBeNull();

    url = await start();
    window.history.replaceState(null, '', `/login/callback?code=c&state=${url.searchParams.get('state')}`);
    await expect(finishOidcLogin(new URL(window.location.href))).rejects.toThrow(/nonce/);
    expect(getToken()).toBeNull();

    await expect(finishOidcLogin(new URL(`${window.location.origin}/login/callback?code=c&state=x`))).rejects.toThrow('no sign-in was started in this tab');
  });

  it('shows the sign-in button when the manager names an issuer, and the callback page lands signed in', async () => {
    let nonce = '';
    const calls = idp(() => ({ access_token: 'at', token_type: 'Bearer', id_token: idToken({ nonce }) }));
    const url = await start('/crds');
    nonce = url.searchParams.get('nonce')!;
    const callback = `/login/callback?code=c-9&state=${url.searchParams.get('state')}`;
    window.history.replaceState(null, '', callback);
    clearToken();
    renderApp(callback);
    clearToken(); // renderApp stores a test token: this sign-in must bring its own
    expect(await screen.findByRole('heading', { name: 'CRDs' })).toBeInTheDocument();
    // The page may render before the layout's whoami goes out: wait for the call, not a moment.
    await waitFor(() =>
      expect(calls.filter((c) => c.path === '/api/v1/whoami').at(-1)?.headers.get('Authorization')).toBe(`Bearer ${getToken()}`),
    );
    expect(getToken()).not.toBe('test-token');
  });

  it('offers the OIDC button on the sign-in page', async () => {
    idp(() => ({}));
    clearToken();
    mockApi({ 'GET /api/v1/ui/config': { oidc: cfg, sessionExchange: true } });
    const { App } = await import('../../app/App');
    const { render } = await import('@testing-library/react');
    render(<App initialPath="/login" />);
    expect(await screen.findByTestId('login-oidc')).toHaveTextContent('Sign in with idp.example');
  });

  it('keeps no ID token the manager gives no role, and says so on the sign-in page', async () => {
    let nonce = '';
    mockApi({
      'GET /api/v1/ui/config': { oidc: cfg, sessionExchange: true },
      'GET /.well-known/openid-configuration': discovery,
      'POST /token': () => ({ access_token: 'at', token_type: 'Bearer', id_token: idToken({ sub: 'nora', nonce }) }),
      'GET /api/v1/whoami': () =>
        json({ code: 'forbidden', message: 'GET /api/v1/whoami needs one of the roles [Admin Operator Viewer EnvironmentOwner]; nora has []' }, 403),
    });
    let url = await start();
    nonce = url.searchParams.get('nonce')!;
    window.history.replaceState(null, '', `/login/callback?code=c&state=${url.searchParams.get('state')}`);
    await expect(finishOidcLogin(new URL(window.location.href))).rejects.toThrow(/signed in as nora, who has no role in slipway/);
    expect(getToken()).toBeNull();

    url = await start();
    nonce = url.searchParams.get('nonce')!;
    const callback = `/login/callback?code=c-2&state=${url.searchParams.get('state')}`;
    window.history.replaceState(null, '', callback);
    const { App } = await import('../../app/App');
    const { render } = await import('@testing-library/react');
    render(<App initialPath={callback} />);
    expect(await screen.findByTestId('login-error')).toHaveTextContent('Sign-in failed: you signed in as nora, who has no role in slipway');
    expect(await screen.findByTestId('login-oidc')).toBeInTheDocument();
    expect(getToken()).toBeNull();
  });

  it('says what the issuer answered when the token request fails', async () => {
    idp(() => json({ error: 'invalid_grant', error_description: 'code expired' }, 400));
    const url = await start();
    window.history.replaceState(null, '', `/login/callback?code=c&state=${url.searchParams.get('state')}`);
    const err = await finishOidcLogin(new URL(window.location.href)).catch((e: unknown) => e);
    expect(oidcErrorMessage(err)).toBe('invalid_grant: code expired');
    expect(getToken()).toBeNull();
  });
});
