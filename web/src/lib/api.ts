// The one client of the manager's API: openapi-fetch over the generated schema, with the auth
// middleware adding the session's Bearer token. A 401 on an authenticated call ends the session
// and returns to sign-in with the current page as return_url.
import createClient, { type Middleware } from 'openapi-fetch';
import type { ApiErrorBody, Paths } from '../api/types';
import { loginHref } from './returnUrl';
import { clearToken, getToken } from './session';

/** Calls that need no token: a 401 from these is a refused sign-in, not an ended session. */
const PUBLIC_PATHS = new Set(['/api/v1/ui/config', '/api/v1/session']);

type UnauthorizedHandler = (loginUrl: string) => void;
let onUnauthorized: UnauthorizedHandler = (url) => window.location.assign(url);

/** Sets what a 401 does once the token is cleared (the app navigates with its router). */
export function setUnauthorizedHandler(fn: UnauthorizedHandler): void {
  onUnauthorized = fn;
}

/** The current page as sign-in's return_url sees it: path and query, never the fragment. */
export function currentPath(): string {
  return window.location.pathname + window.location.search;
}

/** Ends the session after a 401 and goes to sign-in, coming back here afterwards. */
export function sessionExpired(): void {
  clearToken();
  onUnauthorized(loginHref(currentPath()));
}

export const authMiddleware: Middleware = {
  onRequest({ request }) {
    const token = getToken();
    if (token) request.headers.set('Authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ request, response }) {
    // Only an ended session: a 401 while signed out (checking a pasted token) is the caller's.
    if (response.status === 401 && getToken() && !PUBLIC_PATHS.has(new URL(request.url).pathname)) sessionExpired();
    return response;
  },
};

export const api = createClient<Paths>({
  baseUrl: window.location.origin,
  // Looked up at each call, so tests can stub the global fetch.
  fetch: (req) => globalThis.fetch(req),
});
api.use(authMiddleware);

/** An API error with the manager's message (its Error body) and the HTTP status. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly details: { [key: string]: unknown } | undefined;
  constructor(status: number, body: ApiErrorBody | undefined, fallback: string) {
    super(body?.message || fallback);
    this.name = 'ApiError';
    this.status = status;
    this.code = body?.code;
    this.details = body?.details;
  }
}

type FetchResult<T> = { data?: T; error?: unknown; response: Response };

/**
 * The data of an openapi-fetch call, or an ApiError carrying the manager's message:
 * `const ops = await unwrap(api.GET('/api/v1/operators'))`.
 */
export async function unwrap<T>(call: Promise<FetchResult<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || error !== undefined) {
    const body = typeof error === 'object' && error !== null ? (error as ApiErrorBody) : undefined;
    throw new ApiError(response.status, body, `${response.status} ${response.statusText || 'error'}`.trim());
  }
  return data as T;
}
