// Markdown written by people (a CRD revision's migration note) as React elements, with
// react-markdown and no rehype-raw: raw HTML in the text is shown as the text it is, never parsed
// into elements, so no <script>, event handler or style attribute can come from it; a link's
// or an image's URL other than http(s), mailto, irc or xmpp (javascript:, data:, vbscript:) is
// dropped by its defaultUrlTransform and the link shown as text. Links open apart (noopener
// noreferrer); images are never loaded (the CSP allows none from elsewhere, and a note should
// not phone home): each is a link named by its alt text. No element and no CSS is injected: the
// manager's strict CSP holds. Only the pages that show notes import this (route chunks).
import ReactMarkdown, { type Components } from 'react-markdown';
import './markdown.css';

const linkProps = { target: '_blank', rel: 'noopener noreferrer' } as const;

/** A heading inside a note reads as a bold line: a note sits inside a page's own headings. */
const heading: Components['h1'] = ({ children }) => (
  <p>
    <strong>{children}</strong>
  </p>
);

const components: Components = {
  a: ({ href, title, children }) =>
    href ? (
      <a href={href} title={title} {...linkProps}>
        {children}
      </a>
    ) : (
      <span className="md-inert">{children}</span>
    ),
  img: ({ src, alt }) => {
    const name = `image: ${alt || 'untitled'}`;
    return typeof src === 'string' && src ? (
      <a href={src} {...linkProps}>
        {name}
      </a>
    ) : (
      <span className="md-inert">{name}</span>
    );
  },
  h1: heading,
  h2: heading,
  h3: heading,
  h4: heading,
  h5: heading,
  h6: heading,
};

/** text (markdown) as a block of its own. */
export function Markdown({ text }: { text: string }) {
  return (
    <div className="md">
      <ReactMarkdown components={components}>{text}</ReactMarkdown>
    </div>
  );
}
