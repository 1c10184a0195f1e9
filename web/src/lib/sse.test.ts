import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SSEParser, createBatcher, streamSSE, type SSEEvent } from './sse';
import { clearToken, getToken, setToken } from './session';
import { setUnauthorizedHandler } from './api';

function feed(chunks: string[]): { events: SSEEvent[]; parser: SSEParser } {
  const parser = new SSEParser();
  const events = chunks.flatMap((c) => parser.push(c));
  return { events, parser };
}

describe('SSEParser', () => {
  const stream = 'retry: 1000\n\nid: 1\nevent: stage\ndata: {"a":1}\n\n: heartbeat\n\nid: 2\nevent: cluster\ndata: {"b":2}\n\nevent: end\ndata: {"status":"Completed"}\n\n';

  it('parses the manager stream', () => {
    const { events, parser } = feed([stream]);
    expect(events).toEqual([
      { type: 'stage', data: '{"a":1}', id: '1' },
      { type: 'cluster', data: '{"b":2}', id: '2' },
      { type: 'end', data: '{"status":"Completed"}', id: '2' },
    ]);
    expect(parser.retry).toBe(1000);
    expect(parser.lastEventId).toBe('2');
  });

  it('gives the same events however the stream is split', () => {
    const whole = feed([stream]).events;
    for (let size = 1; size <= 7; size++) {
      const chunks: string[] = [];
      for (let i = 0; i < stream.length; i += size) chunks.push(stream.slice(i, i + size));
      expect(feed(chunks).events).toEqual(whole);
    }
  });

  it('accepts CRLF and CR line ends, also split between chunks', () => {
    expect(feed(['id: 7\r\ndata: x\r\n\r\n']).events).toEqual([{ type: 'message', data: 'x', id: '7' }]);
    expect(feed(['data: y\r', '\n\r', '\n']).events).toEqual([{ type: 'message', data: 'y', id: '' }]);
    expect(feed(['data: z\r\r']).events).toEqual([{ type: 'message', data: 'z', id: '' }]);
  });

  it('joins multi-line data and keeps values without the one leading space', () => {
    expect(feed(['data:a\ndata:  b\ndata\n\n']).events).toEqual([{ type: 'message', data: 'a\n b\n', id: '' }]);
  });

  it('does not dispatch an event without data but keeps its id', () => {
    const { events, parser } = feed(['id: 9\nevent: x\n\n']);
    expect(events).toEqual([]);
    expect(parser.lastEventId).toBe('9');
  });

  it('ignores unknown fields, bad retry values and ids with NUL', () => {
    const { events, parser } = feed(['foo: bar\nretry: soon\nid: a\0b\ndata: d\n\n']);
    expect(events).toEqual([{ type: 'message', data: 'd', id: '' }]);
    expect(parser.retry).toBeUndefined();
  });

  it('holds an unfinished event until its blank line', () => {
    const parser = new SSEParser();
    expect(parser.push('data: part')).toEqual([]);
    expect(parser.push('ial\n')).toEqual([]);
    expect(parser.push('\n')).toEqual([{ type: 'message', data: 'partial', id: '' }]);
  });
});

function sseResponse(text: string): Response {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode(text));
      c.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
}

describe('streamSSE', () => {
  beforeEach(() => setToken('tok-123'));
  afterEach(() => {
    vi.unstubAllGlobals();
    clearToken();
  });

  it('sends the Bearer header, reconnects from the last id after a break and stops at end', async () => {
    const calls: Headers[] = [];
    const responses = [
      () => sseResponse('id: 1\nevent: stage\ndata: one\n\nid: 2\nevent: stage\ndata: two\n\n'),
      () => Promise.reject(new TypeError('network down')),
      () => new Response(JSON.stringify({ message: 'busy' }), { status: 503 }),
      () => sseResponse('id: 3\nevent: stage\ndata: three\n\nevent: end\ndata: {}\n\n'),
    ];
    vi.stubGlobal('fetch', vi.fn((_url: string, init: RequestInit) => {
      calls.push(new Headers(init.headers));
      const next = responses.shift();
      if (!next) throw new Error('too many calls');
      return Promise.resolve(next());
    }));
    const got: string[] = [];
    const delays: (number | null)[] = [];
    await streamSSE('/api/v1/deployments/d1/events', {
      onEvent: (e) => got.push(`${e.type}:${e.data}`),
      onError: (_e, d) => delays.push(d),
      minDelayMs: 1,
      maxDelayMs: 3,
    });
    expect(got).toEqual(['stage:one', 'stage:two', 'stage:three', 'end:{}']);
    expect(calls.map((h) => h.get('Authorization'))).toEqual(Array(4).fill('Bearer tok-123'));
    expect(calls.map((h) => h.get('Last-Event-ID'))).toEqual([null, '2', '2', '2']);
    expect(delays).toEqual([1, 2, 3]); // the stream closed, the network failed, 503: doubling, capped
  });

  it('starts from a given cursor and rejects on a 404 without retrying', async () => {
    const fetchMock = vi.fn(() => Promise.resolve(new Response(JSON.stringify({ message: 'deployment d9 not found' }), { status: 404 })));
    vi.stubGlobal('fetch', fetchMock);
    await expect(streamSSE('/x', { onEvent: () => undefined, lastEventId: '41' })).rejects.toThrow('deployment d9 not found');
    expect(fetchMock).toHaveBeenCalledTimes(1);
    const init = (fetchMock.mock.calls[0] as unknown as [string, RequestInit])[1];
    expect(new Headers(init.headers).get('Last-Event-ID')).toBe('41');
  });

  it('ends the session on a 401', async () => {
    vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(new Response('{}', { status: 401 }))));
    const went: string[] = [];
    setUnauthorizedHandler((u) => went.push(u));
    window.history.replaceState(null, '', '/deployments/d1?x=1');
    await expect(streamSSE('/x', { onEvent: () => undefined })).rejects.toThrow('401');
    expect(getToken()).toBeNull();
    expect(went).toEqual(['/login?return_url=%2Fdeployments%2Fd1%3Fx%3D1']);
  });

  it('stops when aborted', async () => {
    const ctl = new AbortController();
    vi.stubGlobal('fetch', vi.fn(() => {
      ctl.abort();
      return Promise.reject(new DOMException('aborted', 'AbortError'));
    }));
    await expect(streamSSE('/x', { onEvent: () => undefined, signal: ctl.signal })).resolves.toBeUndefined();
  });
});

describe('createBatcher', () => {
  it('delivers a burst once after the window and flushes on demand', () => {
    vi.useFakeTimers();
    try {
      const got: number[][] = [];
      const b = createBatcher<number>((items) => got.push(items), 500);
      b.push(1);
      b.push(2);
      vi.advanceTimersByTime(499);
      expect(got).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(got).toEqual([[1, 2]]);
      b.push(3);
      b.flush();
      expect(got).toEqual([[1, 2], [3]]);
      b.push(4);
      b.cancel();
      vi.advanceTimersByTime(1000);
      expect(got).toEqual([[1, 2], [3]]);
    } finally {
      vi.useRealTimers();
    }
  });
});
