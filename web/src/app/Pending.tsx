import { Link } from 'react-router';

/** A page whose feature folder is still being built: its route exists so deep links resolve. */
export function Pending({ title }: { title: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p className="notice">This page is not built yet.</p>
      <Link to="/">Back to the fleet</Link>
    </section>
  );
}
