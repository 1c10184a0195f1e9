// A stand-in for the manager in component tests: global fetch answers from a table of routes
// ("GET /api/v1/fleet" -> a body typed by the generated schema, or a Response). Calls are
// recorded with their headers, so a test can check what the UI sent. (The real manager is what
// the chromedp tests in internal/manager/ui/browsertest drive.)
import { vi } from 'vitest';

export type Handler = (req: Request, url: URL) => Response | unknown | Promise<Response | unknown>;

export interface ApiCall {
  method: string;
  path: string;
  url: URL;
  headers: Headers;
  body: string;
}

/** Stubs fetch with routes keyed "METHOD /path" (exact path; the query is free). */
export function mockApi(routes: Record<string, Handler | object>): ApiCall[] {
  const calls: ApiCall[] = [];
  vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = input instanceof Request ? input : new Request(new URL(String(input), window.location.origin), init);
    const url = new URL(req.url);
    const body = req.method === 'GET' || req.method === 'HEAD' ? '' : await req.clone().text();
    calls.push({ method: req.method, path: url.pathname, url, headers: req.headers, body });
    const h = routes[`${req.method} ${url.pathname}`];
    if (h === undefined) return json({ code: 'notFound', message: `no route ${req.method} ${url.pathname}` }, 404);
    const out = typeof h === 'function' ? await (h as Handler)(req, url) : h;
    return out instanceof Response ? out : json(out);
  });
  return calls;
}

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}
