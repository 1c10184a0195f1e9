//go:build browser || e2e

package browsertest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/slipway-dev/slipway/internal/chromium"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

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

// startBrowser starts the package's headless chromium (internal/chromium: its own empty profile,
// no sandbox, no QUIC, no component updates), trusting the test binary's manager certificate
// alone (managertest.TestCertificate), by its public key. Without chromium the package fails,
// saying how to install it; it never skips.
func startBrowser() (stop func(), err error) {
	cert, err := managertest.TestCertificate()
	if err != nil {
		return nil, err
	}
	spki, err := chromium.SPKIHash(cert.CertPEM)
	if err != nil {
		return nil, err
	}
	ctx, stop, err := chromium.Start(chromium.Options{Width: viewportWidth, Height: viewportHeight, SPKIHash: spki})
	if err != nil {
		return nil, err
	}
	browserCtx = ctx
	return stop, nil
}
