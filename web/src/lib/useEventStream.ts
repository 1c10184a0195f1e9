// A Server-Sent Events stream as a React hook: streamSSE (Bearer header, reconnect from the last
// id with backoff, stops at `end`) with the events handed over in batches (default every 500 ms),
// so a burst becomes one update of the query cache. List first, then stream from the list's
// cursor: pass the list's last event id as lastEventId.
import { useEffect, useRef, useState } from 'react';
import { createBatcher, streamSSE, type SSEEvent } from './sse';

export type StreamState =
  | { status: 'connecting' }
  | { status: 'open' }
  | { status: 'retrying'; error: Error; delayMs: number }
  | { status: 'ended' }
  | { status: 'failed'; error: Error };

export interface EventStreamOptions {
  /** Resume after this id (the list's cursor); read when the stream starts. */
  lastEventId?: string;
  /** Each batch of events, in order. */
  onEvents: (events: SSEEvent[]) => void;
  batchMs?: number;
  endEvent?: string;
}

/** Streams url (null: nothing) while mounted; returns the connection's state. */
export function useEventStream(url: string | null, opts: EventStreamOptions): StreamState {
  const [state, setState] = useState<StreamState>({ status: 'connecting' });
  const latest = useRef(opts);
  latest.current = opts;
  const batchMs = opts.batchMs ?? 500;
  const endEvent = opts.endEvent ?? 'end';

  useEffect(() => {
    if (!url) return;
    const ctl = new AbortController();
    const batch = createBatcher<SSEEvent>((evs) => latest.current.onEvents(evs), batchMs);
    setState({ status: 'connecting' });
    streamSSE(url, {
      lastEventId: latest.current.lastEventId,
      endEvent,
      signal: ctl.signal,
      onOpen: () => setState({ status: 'open' }),
      onEvent: (ev) => {
        batch.push(ev);
        if (ev.type === endEvent) batch.flush();
      },
      onError: (error, delayMs) => {
        if (delayMs !== null) setState({ status: 'retrying', error, delayMs });
      },
    }).then(
      () => {
        if (ctl.signal.aborted) return;
        batch.flush();
        setState({ status: 'ended' });
      },
      (error: Error) => {
        if (ctl.signal.aborted) return;
        batch.flush();
        setState({ status: 'failed', error });
      },
    );
    return () => {
      ctl.abort();
      batch.cancel();
    };
  }, [url, batchMs, endEvent]);

  return url ? state : { status: 'ended' };
}
