import { useEffect } from 'react';
import { RelativeTime } from '../../components/RelativeTime';
import { isTimed, waitingLine, waitingMessage, type Waiting as W } from './model';

/**
 * What the deployment waits for ("waiting: evaluation period, 3 m 10 s left", "waiting: approval
 * by an Admin"; a message that starts with its own "waiting …" says it once), the time left counted down each second (now ticks while a wait is timed);
 * onElapsed runs once the wait's time is up, so the page reads the deployment again.
 */
export function Waiting({ waiting, now, onElapsed }: { waiting: W | null | undefined; now: number; onElapsed?: () => void }) {
  const msg = waitingMessage(waiting, now);
  const elapsed = isTimed(waiting) && Date.parse(waiting.until) <= now;
  useEffect(() => {
    if (elapsed) onElapsed?.();
  }, [elapsed, onElapsed]);
  if (!waiting || !msg) return null;
  const { lead, rest } = waitingLine(msg);
  return (
    <p className="notice waiting" data-testid="waiting" data-reason={waiting.reason}>
      <strong>{lead}</strong> {rest}
      {waiting.reason === 'approval' && waiting.until && <span className="muted">
          {' '}
          (it expires <RelativeTime value={waiting.until} />)
        </span>}
    </p>
  );
}
