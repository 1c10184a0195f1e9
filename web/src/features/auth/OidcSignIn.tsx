/** The OIDC sign-in button (authorization code + PKCE), shown when the manager names an issuer. */
export function OidcSignIn(_props: { returnUrl: string; onError: (msg: string) => void }) {
  return null;
}
