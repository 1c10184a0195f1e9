import '@testing-library/jest-dom/vitest';
import { cleanup } from '@testing-library/react';
import { afterEach } from 'vitest';

// jsdom lays nothing out and its Element.scrollTo does nothing: this one moves the scroll
// position and fires the scroll event a browser would, so virtualised grids follow the keyboard.
Element.prototype.scrollTo = function scrollTo(this: Element, a?: ScrollToOptions | number, b?: number) {
  const o: ScrollToOptions = typeof a === 'number' ? { left: a, top: b } : (a ?? {});
  if (o.left !== undefined) this.scrollLeft = o.left;
  if (o.top !== undefined) this.scrollTop = o.top;
  this.dispatchEvent(new Event('scroll'));
};

afterEach(() => {
  cleanup();
  window.sessionStorage.clear();
});
