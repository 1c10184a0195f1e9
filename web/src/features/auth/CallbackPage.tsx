import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';
import { finishOidcLogin, oidcErrorMessage } from './oidc';

// One exchange per callback address: React's development double effects must not trade the
// code twice (the second would fail and the verifier is gone).
let running: { href: string; done: Promise<string> } | null = null;

function finishOnce(href: string): Promise<string> {
  if (!running || running.href !== href) running = { href, done: finishOidcLogin(new URL(href)) };
  return running.done;
}

/** The sign-in page's state when sign-in failed here: the message it shows. */
export interface LoginState {
  error: string;
}

/**
 * /login/callback: the identity provider sends the browser back here with a code. Signed in, it
 * goes where sign-in started; refused, back to the sign-in page saying why (never to the issuer
 * again on its own: no loop).
 */
export function CallbackPage() {
  const navigate = useNavigate();
  const [href] = useState(() => window.location.href);
  useEffect(() => {
    let live = true;
    finishOnce(href).then(
      (back) => live && navigate(back, { replace: true }),
      (err) => {
        const state: LoginState = { error: `Sign-in failed: ${oidcErrorMessage(err)}` };
        if (live) navigate('/login', { replace: true, state });
      },
    );
    return () => {
      live = false;
    };
  }, [href, navigate]);
  return (
    <main className="login" aria-labelledby="callback-title">
      <h1 id="callback-title">Signing in…</h1>
      <p role="status">Checking the answer of the identity provider…</p>
    </main>
  );
}
