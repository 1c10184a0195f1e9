import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Navigate, useLocation, useNavigate, useSearchParams } from 'react-router';
import { api, unwrap } from '../../lib/api';
import { safeReturnUrl } from '../../lib/returnUrl';
import { setToken, useToken } from '../../lib/session';
import type { LoginState } from './CallbackPage';
import { clearPendingExchange, pendingExchange } from './ticket';
import { OidcSignIn } from './OidcSignIn';

/** /login: a one-time link's exchange, OIDC when configured, or pasting a token. */
export function LoginPage() {
  const [params] = useSearchParams();
  const back = safeReturnUrl(params.get('return_url'));
  const token = useToken();
  const [exchange] = useState(pendingExchange);
  const [status, setStatus] = useState<'idle' | 'exchanging'>(exchange ? 'exchanging' : 'idle');
  const failed = (useLocation().state as LoginState | null)?.error;
  const [error, setError] = useState(params.get('error') ?? failed ?? '');
  const navigate = useNavigate();

  useEffect(() => {
    if (!exchange) return;
    let live = true;
    exchange.then(
      () => {
        if (!live) return;
        clearPendingExchange();
        navigate(back, { replace: true });
      },
      (err: Error) => {
        if (!live) return;
        clearPendingExchange();
        setStatus('idle');
        setError(`The sign-in link did not work: ${err.message}`);
      },
    );
    return () => {
      live = false;
    };
  }, [exchange, back, navigate]);

  if (token && status === 'idle' && !exchange) return <Navigate to={back} replace />;

  return (
    <main className="login" aria-labelledby="login-title">
      <h1 id="login-title">Sign in to slipway</h1>
      {status === 'exchanging' && (
        <p role="status" data-testid="login-exchanging">
          Signing in with the one-time link…
        </p>
      )}
      {error && (
        <p className="notice error" role="alert" data-testid="login-error">
          {error}
        </p>
      )}
      {status === 'idle' && (
        <>
          <OidcSignIn returnUrl={back} onError={setError} />
          <TokenForm back={back} onError={setError} />
        </>
      )}
    </main>
  );
}

function TokenForm({ back, onError }: { back: string; onError: (msg: string) => void }) {
  const id = useId();
  const input = useRef<HTMLTextAreaElement>(null);
  const [busy, setBusy] = useState(false);
  const navigate = useNavigate();
  const qc = useQueryClient();

  async function submit(e: FormEvent) {
    e.preventDefault();
    const t = input.current?.value.trim() ?? '';
    if (!t) {
      onError('Paste a token first.');
      return;
    }
    setBusy(true);
    try {
      // Checked before it is kept: a token the manager refuses is never stored.
      const me = await unwrap(api.GET('/api/v1/whoami', { headers: { Authorization: `Bearer ${t}` } }));
      setToken(t);
      qc.setQueryData(['whoami', t], me);
      navigate(back, { replace: true });
    } catch (err) {
      onError(`The manager refused the token: ${(err as Error).message}`);
      setBusy(false);
    }
  }

  return (
    <form onSubmit={submit} className="card login-token" aria-label="Sign in with a token">
      <label htmlFor={id}>
        Token (from <code>manager token</code> or your identity provider)
      </label>
      <textarea id={id} ref={input} rows={4} cols={60} autoComplete="off" spellCheck={false} data-testid="login-token" />
      <div className="toolbar">
        <button type="submit" className="primary" disabled={busy} data-testid="login-submit">
          Sign in
        </button>
      </div>
    </form>
  );
}
