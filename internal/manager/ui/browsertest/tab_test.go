//go:build browser || e2e

package browsertest

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/manager/ui"
)

// The browser window's size: the documentation's screenshots are this wide.
const (
	viewportWidth  = 1440
	viewportHeight = 900
)

// waitTimeout bounds one step (a navigation, a wait for an element) on a busy two-core machine.
const waitTimeout = 45 * time.Second

// screenshotsEnv names the directory the documentation's screenshots are written to (make
// screenshots sets it to docs/images); unset, none are written.
const screenshotsEnv = "SLIPWAY_SCREENSHOTS"

// manager is the package's manager (managertest.Shared), checked once to serve a built UI.
func manager(t *testing.T) *managertest.Manager {
	t.Helper()
	m := managertest.Shared(t)
	uiOnce.Do(func() {
		r, err := m.Do("GET", "/", "", nil)
		switch {
		case err != nil:
			uiErr = fmt.Errorf("GET /: %w", err)
		case r.Status != http.StatusOK || strings.Contains(string(r.Body), ui.NotBuilt):
			uiErr = fmt.Errorf("the manager binary holds no web UI build (GET / is %d): run make ui (cd web && npm ci && npm run build) before these tests", r.Status)
		}
	})
	if uiErr != nil {
		t.Fatal(uiErr)
	}
	return m
}

var (
	uiOnce sync.Once
	uiErr  error
)

// tab is one test's browser tab, in a browser context of its own (no storage shared with other
// tests), on manager m.
type tab struct {
	t   *testing.T
	ctx context.Context
	m   *managertest.Manager

	mu sync.Mutex
	// console are the page's console errors, uncaught exceptions and browser log warnings.
	console []chromedp.ConsoleMessage
}

// newTab opens a tab for the test, closed when it ends. It records the page's console: a
// Content-Security-Policy violation on any page fails the test. When the test failed, a
// screenshot and the page's URL are kept first (keepEvidence), and the console is logged.
func newTab(t *testing.T, m *managertest.Manager) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil { // opens the tab, with no timeout
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	b := &tab{t: t, ctx: ctx, m: m}
	b.do("size the viewport", chromedp.EmulateViewport(viewportWidth, viewportHeight))
	msgs := chromedp.Console(ctx) // subscribed from here on; ends with the tab
	go func() {
		for msg, err := range msgs {
			if err != nil {
				return
			}
			if msg.Type == chromedp.ConsoleError || msg.Type == chromedp.ConsoleWarning || msg.IsException() {
				b.mu.Lock()
				b.console = append(b.console, msg)
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		for _, v := range b.messages() {
			if isCSPViolation(v) {
				t.Errorf("the page broke its Content-Security-Policy: %s (%s)", v.Text, v.URL)
			}
		}
		if t.Failed() {
			for _, v := range b.messages() {
				t.Logf("console: %s", v)
			}
			b.keepEvidence()
		}
		cancel()
	})
	return b
}

// messages are the console messages recorded so far.
func (b *tab) messages() []chromedp.ConsoleMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.console)
}

// isCSPViolation tells whether msg is the browser refusing something under the page's
// Content-Security-Policy (an inline script or style, an eval, a foreign origin).
func isCSPViolation(msg chromedp.ConsoleMessage) bool {
	return strings.Contains(msg.Text, "Content Security Policy")
}

// The tab last brought to the front: a test with several tabs (alice's and bob's) works in one
// at a time, as a person would, and a tab in the background may run its timers late.
var (
	frontMu sync.Mutex
	front   *tab
)

// toFront brings the tab to the front when another tab was there.
func (b *tab) toFront() {
	frontMu.Lock()
	defer frontMu.Unlock()
	if front == b {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.BringToFront, cdp.Empty{})
		return err
	})); err != nil {
		b.t.Fatalf("bringing the tab to the front: %v", err)
	}
	front = b
}

// do runs steps within waitTimeout, failing the test with what on an error.
func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.toFront()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v (page %s)", what, err, b.url())
	}
}

// get runs action a within waitTimeout and returns its value, failing the test with what on an
// error.
func get[T any](b *tab, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	b.toFront()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v (page %s)", what, err, b.url())
	}
	return v
}

// open navigates to path on the manager and waits until sel is visible.
func (b *tab) open(path string, sel string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.m.URL+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// visible waits until sel is visible.
func (b *tab) visible(sel string) {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// gone waits until nothing matches sel.
func (b *tab) gone(sel string) {
	b.t.Helper()
	b.do("wait for "+sel+" to go", chromedp.WaitNotPresent(chromedp.CSS(sel)))
}

// click waits until sel is visible and clicks it.
func (b *tab) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// text is sel's visible text, once it is visible.
func (b *tab) text(sel string) string {
	b.t.Helper()
	return get(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// waitText waits until the text of an element matching sel contains want, and returns it.
func (b *tab) waitText(sel, want string) string {
	b.t.Helper()
	return get(b, fmt.Sprintf("wait for %s to say %q", sel, want), chromedp.PollFunction[string](`(sel, want) => {
		for (const el of document.querySelectorAll(sel)) {
			const t = el.innerText || el.textContent || '';
			if (t.includes(want)) return t;
		}
		return false;
	}`, chromedp.WithPollingArgs(sel, want), chromedp.WithPollingTimeout(waitTimeout), chromedp.WithPollingInterval(100*time.Millisecond)))
}

// choose selects value in the <select> sel the way a person's pick does: once the option exists,
// the value changes and a change event bubbles (React's onChange); then it waits until the page
// shows the value (a controlled select shows it once the page's state has it). The selector and
// value are written into the scripts: a polling argument that is an empty string does not reach
// the page.
func (b *tab) choose(sel, value string) {
	b.t.Helper()
	what := fmt.Sprintf("choose %q in %s", value, sel)
	get(b, what, chromedp.Poll[bool](fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		return !!el && [...el.options].some((o) => o.value === %q);
	})()`, sel, value), chromedp.WithPollingTimeout(waitTimeout)))
	b.do(what, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set.call(el, %q);
		el.dispatchEvent(new Event('change', {bubbles: true}));
	})()`, sel, value)))
	get(b, what, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(%q)?.value === %q`, sel, value),
		chromedp.WithPollingTimeout(waitTimeout)))
}

// waitAttr waits (up to timeout) until the element sel has attribute name equal to value.
func (b *tab) waitAttr(sel, name, value string, timeout time.Duration) {
	b.t.Helper()
	b.toFront()
	what := fmt.Sprintf("wait for %s to have %s=%q", sel, name, value)
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(%q)?.getAttribute(%q) === %q`, sel, name, value),
		chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		got := get(b, "read "+name, chromedp.Evaluate[string](fmt.Sprintf(`String(document.querySelector(%q)?.getAttribute(%q))`, sel, name)))
		b.t.Fatalf("%s: %v; it is %q (page %s)", what, err, got, b.url())
	}
}

// fill replaces the text of the input or textarea sel as typing would: React's onChange sees
// the new value (the native value setter, then an input event).
func (b *tab) fill(sel, value string) {
	b.t.Helper()
	b.visible(sel)
	b.do(fmt.Sprintf("fill %s with %q", sel, value), chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, %q);
		el.dispatchEvent(new Event('input', {bubbles: true}));
	})()`, sel, value)))
	get(b, "read "+sel, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(%q)?.value === %q`, sel, value),
		chromedp.WithPollingTimeout(waitTimeout)))
}

// waitURL waits until the page's address (without the origin) matches re, and returns it.
func (b *tab) waitURL(re string) string {
	b.t.Helper()
	return get(b, "wait for the address to match "+re, chromedp.PollFunction[string](`(re) => {
		const here = location.pathname + location.search + location.hash;
		return new RegExp(re).test(here) ? here : false;
	}`, chromedp.WithPollingArgs(re), chromedp.WithPollingTimeout(waitTimeout), chromedp.WithPollingInterval(50*time.Millisecond)))
}

// count is how many elements match sel now.
func (b *tab) count(sel string) int {
	b.t.Helper()
	return get(b, "count "+sel, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
}

// url is the page's address ("" when it cannot be read).
func (b *tab) url() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return ""
	}
	return u
}

// signIn signs in as user by pasting the user's token on the sign-in page, and waits for the
// navigation's user line to name the user.
func (b *tab) signIn(user string) {
	b.t.Helper()
	b.open("/login", sel("login-token"))
	b.do("paste "+user+"'s token",
		chromedp.SendKeys(chromedp.CSS(sel("login-token")), b.m.Token(user)),
		chromedp.Click(chromedp.CSS(sel("login-submit"))),
	)
	b.waitText(sel("user-subject"), user)
}

// sel is the CSS selector of the element with data-testid id.
func sel(id string) string { return fmt.Sprintf("[data-testid=%q]", id) }

// screenshot writes a PNG of the whole page to $SLIPWAY_SCREENSHOTS/name, when it is set. The
// mouse moves to the window's bottom right corner first: no link shows the hover of the last
// click (the sign-in button's place is a navigation link's once signed in).
func (b *tab) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	b.do("move the mouse aside", chromedp.MouseEvent(chromedp.MouseMoved, viewportWidth-1, viewportHeight-1))
	png := get(b, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s", filepath.Join(dir, name))
}

// keepEvidence saves a screenshot and the page's URL of a failed test: into its artifact
// directory with -artifacts, else into a directory it logs.
func (b *tab) keepEvidence() {
	dir := evidenceDir(b.t)
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	url := b.url()
	_ = os.WriteFile(filepath.Join(dir, "url.txt"), []byte(url+"\n"), 0o644)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("no screenshot of the failed page %s: %v", url, err)
		return
	}
	_ = os.WriteFile(filepath.Join(dir, "screenshot.png"), png, 0o644)
	b.t.Logf("the failed page %s: screenshot and URL in %s", url, dir)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func evidenceDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	dir, err := os.MkdirTemp("", "slipway-browsertest-"+strings.Trim(unsafeName.ReplaceAllString(t.Name(), "_"), "_")+"-")
	if err != nil {
		t.Logf("no directory for the failed page's screenshot: %v", err)
		return ""
	}
	return dir
}
