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

// Under jsdom the global ArrayBuffer and Uint8Array are not the ones TextEncoder and
// crypto.subtle (Node's) return, so `x instanceof ArrayBuffer` fails where a browser says true
// (oauth4webapi checks it). Tests use Node's, as a browser has one realm.
const nodeBytes = new TextEncoder().encode('');
globalThis.Uint8Array = nodeBytes.constructor as Uint8ArrayConstructor;
globalThis.ArrayBuffer = nodeBytes.buffer.constructor as ArrayBufferConstructor;

afterEach(() => {
  cleanup();
  window.sessionStorage.clear();
});
