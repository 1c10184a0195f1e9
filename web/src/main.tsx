import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { startTicketExchange, takeTicket } from './features/auth/ticket';
import { App } from './app/App';
import './styles/theme.css';

// A one-time sign-in link's ticket leaves the address bar before anything renders, and its
// exchange for a session token starts at once (the sign-in page shows how it went).
const ticket = takeTicket();
if (ticket) startTicketExchange(ticket);

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root');
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
