import { act, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SSEEvent } from './sse';
import { useEventStream } from './useEventStream';

afterEach(() => vi.unstubAllGlobals());

/** A stream the test writes to, frame by frame. */
function controllableStream() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
  return {
    response: new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }),
    write: (s: string) => ctl.enqueue(new TextEncoder().encode(s)),
  };
}

function Probe({ url, onEvents, lastEventId }: { url: string | null; onEvents: (e: SSEEvent[]) => void; lastEventId?: string }) {
  const s = useEventStream(url, { onEvents, lastEventId, batchMs: 50 });
  return <p data-testid="state">{s.status}</p>;
}

describe('useEventStream', () => {
  it('hands events over in batches, from the cursor, and ends at end', async () => {
    const s = controllableStream();
    const fetchMock = vi.fn((_u: string, _i: RequestInit) => Promise.resolve(s.response));
    vi.stubGlobal('fetch', fetchMock);
    const batches: string[][] = [];
    render(<Probe url="/api/v1/deployments/d1/events" lastEventId="7" onEvents={(evs) => batches.push(evs.map((e) => `${e.id}:${e.type}`))} />);
    await waitFor(() => expect(screen.getByTestId('state')).toHaveTextContent('open'));
    expect(new Headers(fetchMock.mock.calls[0]![1].headers).get('Last-Event-ID')).toBe('7');
    act(() => {
      s.write('id: 8\nevent: stage\ndata: {}\n\nid: 9\nevent: cluster\ndata: {}\n\n');
    });
    await waitFor(() => expect(batches).toEqual([['8:stage', '9:cluster']]));
    act(() => {
      s.write('event: end\ndata: {"status":"Completed"}\n\n');
    });
    await waitFor(() => expect(screen.getByTestId('state')).toHaveTextContent('ended'));
    expect(batches).toEqual([['8:stage', '9:cluster'], ['9:end']]);
  });

  it('stops reading when unmounted', async () => {
    const s = controllableStream();
    let signal: AbortSignal | undefined;
    vi.stubGlobal('fetch', (_u: string, init: RequestInit) => {
      signal = init.signal ?? undefined;
      return Promise.resolve(s.response);
    });
    const { unmount } = render(<Probe url="/x" onEvents={() => undefined} />);
    await waitFor(() => expect(screen.getByTestId('state')).toHaveTextContent('open'));
    unmount();
    expect(signal?.aborted).toBe(true);
  });

  it('reports a stream that cannot be read', async () => {
    vi.stubGlobal('fetch', () => Promise.resolve(new Response(JSON.stringify({ message: 'deployment d9 not found' }), { status: 404 })));
    render(<Probe url="/x" onEvents={() => undefined} />);
    await waitFor(() => expect(screen.getByTestId('state')).toHaveTextContent('failed'));
  });
});
