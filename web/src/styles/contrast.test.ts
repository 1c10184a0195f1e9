// The theme's colour pairs meet WCAG 2.1 AA in both schemes: 4.5:1 for text, 3:1 for focus
// outlines and borders that carry meaning. Read from theme.css itself, so a change is checked.
import { describe, expect, it } from 'vitest';
import css from './theme.css?raw';

function vars(block: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of block.matchAll(/--([\w-]+):\s*(#[0-9a-fA-F]{6})\s*;/g)) out[m[1]!] = m[2]!;
  return out;
}

const light = vars(css.slice(css.indexOf(':root {'), css.indexOf('}', css.indexOf(':root {'))));
const darkStart = css.indexOf(':root {', css.indexOf('prefers-color-scheme: dark'));
const dark = { ...light, ...vars(css.slice(darkStart, css.indexOf('}', darkStart))) };

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

const TEXT: [string, string][] = [
  ['fg', 'bg'], ['fg', 'bg-raised'], ['fg', 'bg-sunken'], ['fg-muted', 'bg'], ['fg-muted', 'bg-raised'],
  ['link', 'bg'], ['link', 'bg-raised'], ['accent-fg', 'accent'],
  ['ok-fg', 'ok-bg'], ['warn-fg', 'warn-bg'], ['bad-fg', 'bad-bg'], ['unknown-fg', 'unknown-bg'],
  ['fg', 'add-bg'], ['fg', 'del-bg'], ['fg', 'break-bg'], ['bad-fg', 'break-bg'], ['warn-fg', 'bg'], ['bad-fg', 'bg'],
  ['bg', 'bad-fg'], // the danger button's text
];
const NON_TEXT: [string, string][] = [['focus', 'bg'], ['focus', 'bg-raised'], ['border', 'bg'], ['focus', 'ok-bg'], ['focus', 'bad-bg']];

describe.each([
  ['light', light],
  ['dark', dark],
])('%s theme', (_name, theme) => {
  it.each(TEXT)('text %s on %s is at least 4.5:1', (fg, bg) => {
    expect(theme[fg], fg).toBeDefined();
    expect(theme[bg], bg).toBeDefined();
    expect(contrast(theme[fg]!, theme[bg]!)).toBeGreaterThanOrEqual(4.5);
  });
  it.each(NON_TEXT)('%s on %s is at least 3:1', (fg, bg) => {
    expect(contrast(theme[fg]!, theme[bg]!)).toBeGreaterThanOrEqual(3);
  });
});

describe('the theme', () => {
  it('defines its colours in both schemes', () => {
    expect(Object.keys(light).length).toBeGreaterThan(20);
    expect(dark.fg).not.toBe(light.fg);
    expect(dark.bg).not.toBe(light.bg);
  });
});

describe('contrast', () => {
  it('is 21 for black on white', () => {
    expect(contrast('#000000', '#ffffff')).toBeCloseTo(21, 5);
  });
});
