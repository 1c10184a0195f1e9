// Server-Sent Events over fetch, so the Bearer header goes with the request (EventSource cannot
// send one, and a token never goes into a URL). SSEParser is the pure frame parser of the
// WHATWG event-stream format; streamSSE reads a stream and reconnects with backoff from the
// last event id (Last-Event-ID) until the server sends the event `end` or the caller aborts.
import { sessionExpired } from './api';
import { getToken } from './session';

export interface SSEEvent {
  /** The event's type: the `event:` field, "message" when absent. */
  type: string;
  data: string;
  /** The last `id:` seen so far (the stream's cursor), "" before any. */
  id: string;
}

/** Parses an event stream fed in chunks of any size; push returns the events each completes. */
export class SSEParser {
  lastEventId = '';
  /** The reconnection delay the server asked for with `retry:`, in ms (undefined: none). */
  retry: number | undefined;
  private buf = '';
  private type = '';
  private data: string[] = [];
  private sawCR = false;

  push(chunk: string): SSEEvent[] {
    let text = chunk;
    // A CR at the end of the previous chunk already ended a line: skip the LF of its CRLF.
    if (this.sawCR && text.startsWith('\n')) text = text.slice(1);
    this.sawCR = false;
    this.buf += text;
    const out: SSEEvent[] = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      const line = this.buf.slice(0, m.index);
      const end = m.index + m[0].length;
      if (m[0] === '\r' && end === this.buf.length) this.sawCR = true;
      this.buf = this.buf.slice(end);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  private line(line: string): SSEEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined; // a comment (heartbeat)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.type = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
    return undefined;
  }

  private dispatch(): SSEEvent | undefined {
    const type = this.type || 'message';
    const data = this.data;
    this.type = '';
    this.data = [];
    if (data.length === 0) return undefined;
    return { type, data: data.join('\n'), id: this.lastEventId };
  }
}

export interface StreamOptions {
  /** Each event as it arrives. */
  onEvent: (ev: SSEEvent) => void;
  /** The stream is (re)connected. */
  onOpen?: () => void;
  /** A connection failed or broke; the reader retries after delayMs (null: it gave up). */
  onError?: (err: Error, delayMs: number | null) => void;
  /** Resume after this event id (a list's cursor). */
  lastEventId?: string;
  /** The event type that ends the stream for good (default "end"). */
  endEvent?: string;
  /** Backoff: first delay, doubled up to maxDelayMs (defaults 1 s, 30 s). */
  minDelayMs?: number;
  maxDelayMs?: number;
  signal?: AbortSignal;
}

/** Retry-able failures: the network, a broken stream, 408, 429 and 5xx. */
class RetryableError extends Error {}

/**
 * Reads the SSE stream at url until endEvent, an abort or a non-retryable HTTP status; resolves
 * then (rejects only on a non-retryable error). A 401 ends the session (sign-in again).
 */
export async function streamSSE(url: string, opts: StreamOptions): Promise<void> {
  const parser = new SSEParser();
  parser.lastEventId = opts.lastEventId ?? '';
  const minDelay = opts.minDelayMs ?? 1000;
  const maxDelay = opts.maxDelayMs ?? 30_000;
  let failures = 0;
  for (;;) {
    if (opts.signal?.aborted) return;
    try {
      const ended = await readOnce(url, parser, opts, () => {
        failures = 0;
        opts.onOpen?.();
      });
      if (ended) return;
      throw new RetryableError('the event stream closed');
    } catch (err) {
      if (opts.signal?.aborted) return;
      if (!(err instanceof RetryableError || err instanceof TypeError)) {
        opts.onError?.(err as Error, null);
        throw err;
      }
      const base = failures === 0 && parser.retry !== undefined ? parser.retry : minDelay * 2 ** failures;
      const delay = Math.min(base, maxDelay);
      failures++;
      opts.onError?.(err as Error, delay);
      await sleep(delay, opts.signal);
    }
  }
}

/** One connection; true when the end event came. */
async function readOnce(url: string, parser: SSEParser, opts: StreamOptions, opened: () => void): Promise<boolean> {
  const headers: Record<string, string> = { Accept: 'text/event-stream' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (parser.lastEventId) headers['Last-Event-ID'] = parser.lastEventId;
  const res = await globalThis.fetch(url, { headers, signal: opts.signal, cache: 'no-store' });
  if (!res.ok) {
    if (res.status === 401) {
      sessionExpired();
      throw new Error('the session ended (401)');
    }
    const msg = await errorMessage(res);
    if (res.status === 408 || res.status === 429 || res.status >= 500) throw new RetryableError(msg);
    throw new Error(msg);
  }
  if (!res.body) throw new RetryableError('the event stream has no body');
  opened();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const end = opts.endEvent ?? 'end';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return false;
      for (const ev of parser.push(value)) {
        opts.onEvent(ev);
        if (ev.type === end) return true;
      }
    }
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    throw new RetryableError(err instanceof Error ? err.message : String(err));
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

async function errorMessage(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { message?: string };
    if (body.message) return body.message;
  } catch {
    // not JSON: the status says it
  }
  return `${res.status} ${res.statusText}`.trim();
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/**
 * Collects items and hands them over in one batch at most every ms (default 500): a burst of
 * events becomes one update of the query cache. flush() hands over what is pending now.
 */
export function createBatcher<T>(deliver: (items: T[]) => void, ms = 500) {
  let pending: T[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const items = pending;
    pending = [];
    deliver(items);
  };
  return {
    push(item: T) {
      pending.push(item);
      if (timer === undefined) timer = setTimeout(flush, ms);
    },
    flush,
    /** Drops what is pending (on unmount). */
    cancel() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      pending = [];
    },
  };
}
