import { useQueryClient } from '@tanstack/react-query';
import { NavLink, Navigate, Outlet, useLocation, useNavigate } from 'react-router';
import { can, roleLabel } from '../lib/roles';
import { loginHref } from '../lib/returnUrl';
import { useToken } from '../lib/session';
import { signOut as endSession } from '../features/auth/signOut';
import { useMe } from './useMe';

/** The pages' frame: the navigation, who is signed in with which role, and sign-out. */
export function Layout() {
  const token = useToken();
  const loc = useLocation();
  if (!token) return <Navigate to={loginHref(loc.pathname + loc.search)} replace />;
  return (
    <div className="app">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Nav />
      <main id="main" className="app-main" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  );
}

function Nav() {
  const { me, error } = useMe();
  const qc = useQueryClient();
  const navigate = useNavigate();
  function signOut() {
    // The token is cleared at once; the manager revokes it meanwhile (best effort).
    void endSession();
    qc.clear();
    navigate('/login', { replace: true });
  }
  return (
    <nav className="app-nav" aria-label="Main">
      <div className="brand">slipway</div>
      <NavLink to="/" end data-testid="nav-fleet">
        Fleet
      </NavLink>
      <NavLink to="/deployments" end data-testid="nav-deployments">
        Deployments
      </NavLink>
      {can(me, 'deployment.create') && (
        <NavLink to="/deployments/new" data-testid="nav-new-deployment">
          New deployment
        </NavLink>
      )}
      <NavLink to="/approvals" data-testid="nav-approvals">
        Approvals
      </NavLink>
      <NavLink to="/operators" data-testid="nav-operators">
        Operators
      </NavLink>
      <NavLink to="/crds" data-testid="nav-crds">
        CRDs
      </NavLink>
      <NavLink to="/clusters" data-testid="nav-clusters">
        Clusters
      </NavLink>
      {can(me, 'audit.read') && (
        <NavLink to="/audit" data-testid="nav-audit">
          Audit
        </NavLink>
      )}
      <div className="app-user" data-testid="user">
        {me ? (
          <>
            <span>
              Signed in as <strong data-testid="user-subject">{me.subject}</strong>
            </span>
            <span className="role" data-testid="user-role">
              {roleLabel(me)}
            </span>
          </>
        ) : error ? (
          <span className="role">identity unknown: {error.message}</span>
        ) : (
          <span className="role">signed in</span>
        )}
        <button type="button" onClick={signOut} data-testid="sign-out">
          Sign out
        </button>
      </div>
    </nav>
  );
}
