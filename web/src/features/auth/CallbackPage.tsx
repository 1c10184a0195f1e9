import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { finishOidcLogin, oidcErrorMessage } from './oidc';

// One exchange per callback address: React's development double effects must not trade the
// code twice (the second would fail and the verifier is gone).
let running: { href: string; done: Promise<string> } | null = null;

function finishOnce(href: string): Promise<string> {
  if (!running || running.href !== href) running = { href, done: finishOidcLogin(new URL(href)) };
  return running.done;
}

/** /login/callback: the identity provider sends the browser back here with a code. */
export function CallbackPage() {
  const navigate = useNavigate();
  const [href] = useState(() => window.location.href);
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    finishOnce(href).then(
      (back) => live && navigate(back, { replace: true }),
      (err) => live && setError(oidcErrorMessage(err)),
    );
    return () => {
      live = false;
    };
  }, [href, navigate]);
  return (
    <main className="login" aria-labelledby="callback-title">
      <h1 id="callback-title">Signing in…</h1>
      {error ? (
        <>
          <p className="notice error" role="alert" data-testid="login-error">
            Sign-in failed: {error}
          </p>
          <Link to="/login">Back to sign-in</Link>
        </>
      ) : (
        <p role="status">Checking the answer of the identity provider…</p>
      )}
    </main>
  );
}
