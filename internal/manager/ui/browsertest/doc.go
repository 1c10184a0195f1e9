// Package browsertest holds the web UI's tests in a real browser: Debian's chromium, driven
// headless by chromedp over its DevTools pipe, against a real `manager serve` (the built binary
// with the UI embedded, managertest's shared manager over TLS) seeded with real local
// kube-apiservers. They sign in (a pasted token, and the one-time link), see the fleet, start a
// Canary from the New deployment form, watch it advance live, approve it as another Admin, pause,
// resume and roll it back; reject a deployment from the Approvals inbox, cancel a running one and
// switch a BlueGreen to green, each followed live; read a breaking CRD diff, and check what a
// Viewer sees, that a 401 returns to sign-in and that the pages run under the strict CSP; read a
// deployment's analysis runs measured against a real Prometheus, an operator's health per cluster
// (whose failures, its error rate, its baseline) and a Fleet cell that only alerts. Every
// page passes axe-core's WCAG 2 A and AA rules in the light and the dark colour scheme (axe-core
// is a devDependency of web/, read from web/node_modules: npm ci, which make test runs), and the
// Fleet is walked with the keyboard. BenchmarkFleet_Browser measures the Fleet page on 10,000 cells.
//
// The tests carry the build tags browser and e2e (either one runs them; make test passes e2e).
// They need the UI built (make ui) and chromium installed (hack/deps.sh test); a missing one
// fails the package, naming the command that fixes it:
//
//	make ui && KUBEBUILDER_ASSETS=$(hack/controlplane.sh) go test -tags browser -count=1 ./internal/manager/ui/browsertest/
//
// SLIPWAY_CHROMIUM names another browser binary. With SLIPWAY_SCREENSHOTS set to a directory the
// tests also write the documentation's screenshots there (make screenshots: docs/images). A
// failing test keeps a screenshot and the page's URL (with -artifacts, in the test's artifact
// directory; otherwise in a directory it names in its log).
package browsertest
