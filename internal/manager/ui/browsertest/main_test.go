//go:build browser || e2e

package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// chromiumEnv names the browser binary to use instead of chromium from PATH.
const chromiumEnv = "SLIPWAY_CHROMIUM"

// browserCtx is the package's browser, started by TestMain; each test opens its own tab (newTab).
var browserCtx context.Context

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	stop, err := startBrowser()
	if err != nil {
		fmt.Fprintf(os.Stderr, "browsertest: %v\n", err)
		return 1
	}
	code := m.Run()
	stop()
	return testenv.StopFleet(managertest.StopShared(code))
}

// chromiumPath is $SLIPWAY_CHROMIUM, else chromium from PATH. Never a skip: without a browser
// the package fails, saying how to install one.
func chromiumPath() (string, error) {
	if p := os.Getenv(chromiumEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", chromiumEnv, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", errors.New("no chromium in PATH: the web UI's tests drive Debian's chromium; install it with " +
			"hack/deps.sh test (make deps), or name a browser binary in $" + chromiumEnv)
	}
	return p, nil
}

// startBrowser starts one headless chromium for the package: its own empty profile, no sandbox
// (the tests run as root), no QUIC, no component updates, a desktop-sized window, and trust in
// the test binary's manager certificate alone (managertest.TestCertificate), by its public key.
func startBrowser() (stop func(), err error) {
	path, err := chromiumPath()
	if err != nil {
		return nil, err
	}
	cert, err := managertest.TestCertificate()
	if err != nil {
		return nil, err
	}
	profile, err := os.MkdirTemp("", "slipway-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(viewportWidth, viewportHeight),
		chromedp.Flag("ignore-certificate-errors-spki-list", cert.SPKIHash),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	stop = func() {
		cancelBrowser()
		cancelAlloc()
		_ = os.RemoveAll(profile)
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no timeout
		stop()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	browserCtx = ctx
	return stop, nil
}
