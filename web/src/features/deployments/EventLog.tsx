import { RelativeTime } from '../../components/RelativeTime';
import type { DeploymentEvent } from './model';

/** The deployment's step history, newest first: time, cluster, step and message. */
export function EventLog({ events }: { events: DeploymentEvent[] }) {
  if (events.length === 0) return <p className="muted">No event yet.</p>;
  const rows = [...events].reverse();
  return (
    <table className="data event-log" data-testid="event-log">
      <caption className="visually-hidden">Events, newest first</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Cluster</th>
          <th scope="col">Step</th>
          <th scope="col">Message</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((e) => (
          <tr key={e.id} data-testid="event-row" data-type={e.type} data-event-id={e.id}>
            <td>
              <RelativeTime value={e.time} />
            </td>
            <td>{e.cluster || <span className="muted">—</span>}</td>
            <td className="mono">{e.type}</td>
            <td>{e.message}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
