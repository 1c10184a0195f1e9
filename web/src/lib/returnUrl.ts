// Where sign-in returns to: only a path of this origin (no scheme, no "//host", no backslash
// tricks), and never the sign-in pages themselves; anything else returns to the fleet.
export function safeReturnUrl(raw: string | null | undefined): string {
  if (!raw) return '/';
  if (!raw.startsWith('/') || raw.startsWith('//') || raw.includes('\\')) return '/';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f]/.test(raw)) return '/';
  const url = new URL(raw, 'http://origin.invalid');
  if (url.origin !== 'http://origin.invalid') return '/';
  if (url.pathname === '/login' || url.pathname.startsWith('/login/')) return '/';
  return url.pathname + url.search;
}

/** The sign-in page's address that comes back to path (a path with its query, no fragment). */
export function loginHref(path: string): string {
  const back = safeReturnUrl(path);
  return back === '/' ? '/login' : `/login?return_url=${encodeURIComponent(back)}`;
}
