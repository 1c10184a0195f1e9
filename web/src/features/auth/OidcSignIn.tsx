import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../lib/api';
import { oidcErrorMessage, startOidcLogin } from './oidc';

/** GET /api/v1/ui/config (public): how this manager signs people in. */
export function useUIConfig() {
  return useQuery({ queryKey: ['ui-config'], queryFn: () => unwrap(api.GET('/api/v1/ui/config')), staleTime: Infinity });
}

/** The OIDC sign-in button (authorization code + PKCE), shown when the manager names an issuer. */
export function OidcSignIn({ returnUrl, onError }: { returnUrl: string; onError: (msg: string) => void }) {
  const cfg = useUIConfig();
  const [busy, setBusy] = useState(false);
  const oidc = cfg.data?.oidc;
  if (!oidc?.issuer || !oidc.clientId) return null;
  let host = oidc.issuer;
  try {
    host = new URL(oidc.issuer).host;
  } catch {
    // shown as configured
  }
  async function go() {
    setBusy(true);
    try {
      await startOidcLogin({ issuer: oidc!.issuer!, clientId: oidc!.clientId!, scopes: oidc!.scopes ?? [] }, returnUrl);
    } catch (err) {
      onError(`Signing in with ${host} failed: ${oidcErrorMessage(err)}`);
      setBusy(false);
    }
  }
  return (
    <div className="card login-oidc">
      <button type="button" className="primary" onClick={() => void go()} disabled={busy} data-testid="login-oidc">
        {busy ? `Going to ${host}…` : `Sign in with ${host}`}
      </button>
      <p className="muted small">or paste a token below</p>
    </div>
  );
}
