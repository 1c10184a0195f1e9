import { render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { Note } from '../features/crds/Note';
import { Markdown } from './Markdown';

declare global {
  interface Window {
    pwned?: number;
  }
}

afterEach(() => {
  delete window.pwned;
});

/** Every attribute of every element under root, as name=value. */
function attributes(root: Element): string[] {
  return [...root.querySelectorAll('*')].flatMap((el) => [...el.attributes].map((a) => `${el.tagName.toLowerCase()} ${a.name}=${a.value}`));
}

const HOSTILE = [
  'Before <script>window.pwned = 1</script> after.',
  '',
  '<img src="x" onerror="window.pwned = 2">',
  '',
  '<a href="javascript:window.pwned=3">raw link</a> <b onclick="window.pwned=4">bold</b>',
  '',
  '[inline](javascript:window.pwned=5) [mixed case](JaVaScRiPt:window.pwned=6) [entity](&#106;avascript:window.pwned=7)',
  '[reference][evil] <javascript:window.pwned=8> [data](data:text/html;base64,PHNjcmlwdD4=) [vb](vbscript:msgbox)',
  '',
  '![tracker](javascript:window.pwned=9) ![pixel](https://tracker.example/p.png)',
  '',
  '<style>body { display: none }</style><iframe src="https://example.com"></iframe>',
  '',
  '[evil]: javascript:window.pwned=10',
].join('\n');

describe('Markdown (migration notes)', () => {
  it('renders a note’s markdown: code, emphasis, lists, links that open apart', () => {
    const { container } = render(
      <Markdown text={'Removes `spec.legacy` and the colour **blue**, _see_:\n\n- one\n- two\n\nRead [the guide](https://example.com/guide "Guide").'} />,
    );
    expect(within(container).getByText('spec.legacy').tagName).toBe('CODE');
    expect(within(container).getByText('blue').tagName).toBe('STRONG');
    expect(within(container).getByText('see').tagName).toBe('EM');
    expect(within(container).getAllByRole('listitem').map((li) => li.textContent)).toEqual(['one', 'two']);
    const link = within(container).getByRole('link', { name: 'the guide' });
    expect(link).toHaveAttribute('href', 'https://example.com/guide');
    expect(link).toHaveAttribute('target', '_blank');
    expect(link).toHaveAttribute('rel', 'noopener noreferrer');
    expect(link).toHaveAttribute('title', 'Guide');
    expect(container.textContent).not.toMatch(/[`*]/);
  });

  it('keeps <script>, event handlers, raw HTML and javascript: links inert', () => {
    const { container } = render(<Markdown text={HOSTILE} />);
    for (const tag of ['script', 'img', 'iframe', 'style', 'b']) {
      expect(container.querySelector(tag), tag).toBeNull();
    }
    // Raw HTML is shown as the text it is, never as elements.
    expect(container).toHaveTextContent('<script>window.pwned = 1</script>');
    expect(container).toHaveTextContent('<img src="x" onerror="window.pwned = 2">');
    const attrs = attributes(container);
    expect(attrs.filter((a) => /^\S+ on/i.test(a))).toEqual([]);
    expect(attrs.filter((a) => /\b(href|src)=\s*(javascript|vbscript|data):/i.test(a))).toEqual([]);
    expect(attrs.filter((a) => / style=/.test(a))).toEqual([]);
    // Every link that is left is an http(s) one that opens apart; the others are text.
    for (const a of container.querySelectorAll('a')) {
      expect(a.getAttribute('href')).toMatch(/^https:\/\//);
      expect(a).toHaveAttribute('rel', 'noopener noreferrer');
    }
    expect(within(container).getByText('inline').tagName).toBe('SPAN');
    expect(within(container).getByText('reference').tagName).toBe('SPAN');
    // An image is never loaded (the CSP allows none from elsewhere): its link, named by its alt text.
    expect(within(container).getByRole('link', { name: 'image: pixel' })).toHaveAttribute('href', 'https://tracker.example/p.png');
    expect(within(container).getByText('image: tracker').tagName).toBe('SPAN');
    expect(window.pwned).toBeUndefined();
  });

  it('shows a note with its guide link, and a dash for none', () => {
    render(
      <ul>
        <li data-testid="a">
          <Note note={{ text: 'Set `spec.mode`.', url: 'https://example.com/migrate' }} />
        </li>
        <li data-testid="b">
          <Note note={{ text: 'x', url: 'javascript:window.pwned=11' }} />
        </li>
        <li data-testid="c">
          <Note note={null} />
        </li>
      </ul>,
    );
    const a = screen.getByTestId('a');
    expect(within(a).getByText('spec.mode').tagName).toBe('CODE');
    expect(within(a).getByRole('link', { name: 'migration guide' })).toHaveAttribute('rel', 'noopener noreferrer');
    expect(within(screen.getByTestId('b')).queryByRole('link')).toBeNull();
    expect(screen.getByTestId('c')).toHaveTextContent('—');
  });
});
