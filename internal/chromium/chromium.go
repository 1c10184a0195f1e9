// Package chromium starts Debian's chromium headless for the tests that look at the web UI in a
// real browser (internal/manager/ui/browsertest, make dev's acceptance test): one browser with
// its own empty profile, no sandbox (the tests run as root), no QUIC and no component updates
// (this machine kind's closed network refuses their connections), trusting one TLS certificate
// by its public key. Nothing here downloads a browser.
package chromium

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Env names the browser binary to use instead of chromium from PATH.
const Env = "SLIPWAY_CHROMIUM"

// Path is $SLIPWAY_CHROMIUM, else chromium from PATH. Never a skip: without a browser the caller
// fails, saying how to install one.
func Path() (string, error) {
	if p := os.Getenv(Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$%s: %w", Env, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", errors.New("no chromium in PATH: the web UI's tests drive Debian's chromium; install it with " +
			"hack/deps.sh test (make deps), or name a browser binary in $" + Env)
	}
	return p, nil
}

// Options are a browser's window size and the certificate it trusts.
type Options struct {
	Width, Height int
	// SPKIHash is the base64 SHA-256 of the trusted certificate's public key (SPKIHash); empty:
	// only certificates the system trusts.
	SPKIHash string
}

// Start starts the browser and returns its context (open tabs with chromedp.NewContext on it)
// and a stop function that ends it and removes its profile.
func Start(o Options) (context.Context, func(), error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	profile, err := os.MkdirTemp("", "slipway-chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(profile),
		// Chromium makes its singleton socket's directory (org.chromium.Chromium.*) in TMPDIR and
		// leaves it when it is killed, as stop does: inside the profile, it goes with it.
		chromedp.Env("TMPDIR="+profile),
	)
	if o.Width > 0 && o.Height > 0 {
		opts = append(opts, chromedp.WindowSize(o.Width, o.Height))
	}
	if o.SPKIHash != "" {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", o.SPKIHash))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	stop := func() {
		cancelBrowser()
		cancelAlloc()
		_ = os.RemoveAll(profile)
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no timeout
		stop()
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return ctx, stop, nil
}

// SPKIHash is what chromium's --ignore-certificate-errors-spki-list takes for the first
// certificate of a PEM file's content: the base64 SHA-256 of its SubjectPublicKeyInfo.
func SPKIHash(certPEM []byte) (string, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}
