import { Link, useLocation } from 'react-router';

export function NotFound() {
  const loc = useLocation();
  return (
    <section>
      <h1>Not found</h1>
      <p>
        Nothing lives at <code>{loc.pathname}</code>.
      </p>
      <Link to="/">Go to the fleet</Link>
    </section>
  );
}
