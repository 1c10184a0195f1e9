import { describe, expect, it } from 'vitest';
import { loginHref, safeReturnUrl } from './returnUrl';

describe('safeReturnUrl', () => {
  it.each([
    ['/deployments/d-1?x=1', '/deployments/d-1?x=1'],
    ['/fleet?environment=Production', '/fleet?environment=Production'],
    ['', '/'],
    [null, '/'],
    ['https://evil.example/', '/'],
    ['//evil.example/x', '/'],
    ['/\\evil.example', '/'],
    ['javascript:alert(1)', '/'],
    ['/login?return_url=/x', '/'],
    ['/login/callback?code=1', '/'],
    ['/a\nb', '/'],
  ])('%s -> %s', (raw, want) => {
    expect(safeReturnUrl(raw)).toBe(want);
  });
});

describe('loginHref', () => {
  it('carries the path and query', () => {
    expect(loginHref('/crds/x?from=1&to=2')).toBe('/login?return_url=%2Fcrds%2Fx%3Ffrom%3D1%26to%3D2');
  });
  it('is plain for the fleet', () => {
    expect(loginHref('/')).toBe('/login');
  });
});
