// Package managertest runs a real operator manager for the tests of other packages (the browser
// tests of the web UI, the slipway CLI's end-to-end tests, the terminal test of `deployment
// watch`): cmd/manager built once per test binary with the shipped build flags (or the binary
// $SLIPWAY_MANAGER_BINARY names), started as `manager serve` on loopback over TLS (a self-signed
// certificate) or plain HTTP, with SQLite in a temporary directory (or a PostgreSQL database from
// pgtest), an HS256 secret, an encryption key and short check intervals; then seeded through its
// own API the way a user would:
//
//   - clusters from the test binary's kube-apiservers with workloads (testenv.WorkloadFleet, so
//     Deployments become Available and rollouts complete): dev-1 and dev-2 in Dev, staging-1 in
//     Staging, prod-1 in Production (DefaultClusters);
//   - an operator (widget-operator) whose Helm repository is served locally by charttest, with
//     versions 1.0.0, 1.1.0 (a compatible CRD change) and 2.0.0 (a breaking one: a field
//     removed, a type changed, a field made required, an enum value dropped), each with a
//     migration note;
//   - 1.0.0 deployed to every cluster by a Direct deployment that alice asked for and bob
//     approved, so the fleet has installed versions that drift from the latest.
//
// Start returns once that deployment completed and every cluster and the operator on it are
// Healthy. Tokens for the users by role (Users: Admins alice and bob, Operator otto, Viewer
// vera) come from Token; Deploy, Approve and WaitStatus drive deployments.
//
//	m := managertest.Start(t, managertest.Options{})  // one manager for this test
//	m := managertest.Shared(t)                        // one manager for the whole test binary
//	dep := m.Deploy(t, managertest.Alice, map[string]any{"operator": m.Operator, "version": "1.1.0",
//		"environments": []string{"Dev"}, "strategy": "Canary", "canaryConfig": map[string]any{"evaluationPeriod": "PT20S"}})
//	m.ApproveAll(t, dep.ID, managertest.Bob)
//	m.WaitStatus(t, dep.ID, "Completed", 3*time.Minute)
//
// A test binary that uses it calls, in TestMain, StopShared then testenv.StopFleet (and
// pgtest.Stop with Options.Engine "postgres"):
//
//	func TestMain(m *testing.M) { os.Exit(testenv.StopFleet(managertest.StopShared(m.Run()))) }
//
// Periods are real: manager serve has no way to shorten a deployment's holds (the engine's
// TestHoldScale is for in-process tests only), so tests ask for short evaluation and validation
// periods (PT10S, PT20S) as a user may.
//
// The tests run with the build tag e2e (the fleet runs workloads), with KUBEBUILDER_ASSETS set:
//
//	KUBEBUILDER_ASSETS=$(hack/controlplane.sh) go test -tags e2e ./internal/manager/managertest/
package managertest

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BinaryEnv names a prebuilt manager binary to run instead of building cmd/manager (the same
// variable as cmd/manager's own tests).
const BinaryEnv = "SLIPWAY_MANAGER_BINARY"

// The users the harness hands out tokens for.
const (
	// Alice is an Admin: she registers the clusters and the operator, and asks for the seed
	// deployment.
	Alice = "alice"
	// Bob is a second Admin, who approves what alice asked for (nobody approves their own request).
	Bob = "bob"
	// Otto is an Operator: he may deploy, pause, resume and cancel, not roll back or approve
	// Admin approvals.
	Otto = "otto"
	// Vera is a Viewer: she reads everything and changes nothing.
	Vera = "vera"
)

// Users are the harness's users and their roles.
var Users = map[string]auth.Role{Alice: auth.Admin, Bob: auth.Admin, Otto: auth.Operator, Vera: auth.Viewer}

// The operator's chart versions (DefaultCharts).
const (
	// SeedVersion is the version the seed deployment installs on every cluster.
	SeedVersion = "1.0.0"
	// CompatibleVersion changes the Widget CRD compatibly (a field and an enum value added).
	CompatibleVersion = "1.1.0"
	// BreakingVersion breaks the Widget CRD (charttest.Breaking); it is the latest.
	BreakingVersion = "2.0.0"
)

// WidgetCRD is the name of the CRD every version of the operator ships.
const WidgetCRD = "widgets." + charttest.Group

// ChartName is the chart's name in the repository.
const ChartName = "widget-operator"

// Cluster is one registered cluster.
type Cluster struct {
	Name        string
	Environment string
	// Server is the kube-apiserver it is registered from (its Config and Kubeconfig reach it).
	Server *controlplane.FleetServer
}

// DefaultClusters are the clusters registered when Options.Clusters is empty: a Canary over them
// has the design's three stages (dev-1; dev-2; staging-1 and prod-1).
var DefaultClusters = []Cluster{
	{Name: "dev-1", Environment: "Dev"},
	{Name: "dev-2", Environment: "Dev"},
	{Name: "staging-1", Environment: "Staging"},
	{Name: "prod-1", Environment: "Production"},
}

// Options configure a manager. The zero value is the default world described in the package doc.
type Options struct {
	// Engine is the store: "sqlite" (default) or "postgres" (pgtest; TestMain calls pgtest.Stop).
	Engine string
	// PlainHTTP serves plain HTTP (--insecure-http) instead of TLS with the harness's certificate.
	PlainHTTP bool
	// Clusters are registered in this order, each on its own server of the fleet (the Server
	// field is ignored). Default DefaultClusters.
	Clusters []Cluster
	// Operator is the operator's name and namespace. Default: widget-operator for Shared,
	// widget-operator-<random> for Start (the fleet outlives each manager, and each manager's
	// Helm releases must be its own).
	Operator string
	// Charts are the versions the chart repository serves. Default DefaultCharts().
	Charts []charttest.ChartFiles
	// NoSeed leaves the clusters empty: no seed deployment.
	NoSeed bool
	// Args are more `manager serve` flags, after the harness's (a later flag wins).
	Args []string
}

// DefaultCharts are the operator chart's versions: SeedVersion (charttest.Base),
// CompatibleVersion (charttest.Compatible) and BreakingVersion (charttest.Breaking).
func DefaultCharts() []charttest.ChartFiles {
	return []charttest.ChartFiles{
		charttest.OperatorChart(ChartName, SeedVersion, charttest.Base),
		charttest.OperatorChart(ChartName, CompatibleVersion, charttest.Compatible),
		charttest.OperatorChart(ChartName, BreakingVersion, charttest.Breaking),
	}
}

// Manager is a running, seeded manager.
type Manager struct {
	// URL is the API's and the UI's base URL (https://127.0.0.1:<port>, or http:// with PlainHTTP).
	URL string
	// CAFile is the PEM file of the certificate the manager serves (empty with PlainHTTP): a
	// client trusts the manager by adding it to its roots.
	CAFile string
	// Client is an HTTP client that trusts the manager.
	Client *http.Client
	// Clusters are the registered clusters, in registration order.
	Clusters []Cluster
	// Operator is the registered operator's name (its namespace too).
	Operator string
	// Repo is the operator's chart repository (Repo.Add publishes another version; the manager
	// finds it within seconds, --operator-refresh-interval being short).
	Repo *charttest.Repository
	// Seed is the seed deployment as it completed (empty with NoSeed).
	Seed api.Deployment
	// Log is what the manager has written to its standard error so far.
	Log *testenv.SyncBuffer

	bin    string
	dir    string
	env    []string
	secret []byte
	tokens map[string]string
	proc   *process
}

// Start starts and seeds a manager for one test; it is killed when the test ends, and its log's
// last lines are printed when the test failed.
func Start(tb testing.TB, opts Options) *Manager {
	tb.Helper()
	if opts.Operator == "" {
		opts.Operator = ChartName + "-" + strings.ToLower(rand.Text()[:5])
	}
	l := &life{TB: tb}
	m, err := start(l, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("manager serve log (last lines):\n%s", m.LogTail(60))
		}
	})
	return m
}

// The test binary's shared manager (Shared), stopped by StopShared.
var (
	sharedMu   sync.Mutex
	sharedVal  *Manager
	sharedLife *life
)

// Shared returns the test binary's manager with the default Options, starting and seeding it on
// first use; StopShared (in TestMain) stops it. Tests sharing it see each other's deployments:
// one that changes what the clusters run restores it (a rollback) or uses its own manager.
func Shared(tb testing.TB) *Manager {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedVal != nil {
		return sharedVal
	}
	l := &life{TB: tb, shared: true}
	started := false
	defer func() {
		if !started { // failed, or tb.Fatal from a part: stop what did start
			l.runCleanups()
		}
	}()
	m, err := start(l, Options{Operator: ChartName})
	if err != nil {
		tb.Fatal(err)
	}
	l.detach()
	started = true
	sharedVal, sharedLife = m, l
	return m
}

// StopShared stops the shared manager, if one was started, and returns the exit code for
// TestMain: code, or 1 when a cleanup failed. After a failing run it prints the manager's log.
func StopShared(code int) int {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedVal == nil {
		return code
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "shared manager serve log (last lines):\n%s\n", sharedVal.LogTail(80))
	}
	if sharedLife.runCleanups() {
		code = max(code, 1)
	}
	sharedVal, sharedLife = nil, nil
	return code
}

// Token is the bearer token of one of Users (minted at start, valid for 12 hours).
func (m *Manager) Token(user string) string {
	tok, ok := m.tokens[user]
	if !ok {
		panic(fmt.Sprintf("managertest: no user %q (the users are alice, bob, otto and vera)", user))
	}
	return tok
}

// MintToken mints a token for any subject and roles, valid for ttl, signed with the manager's
// secret.
func (m *Manager) MintToken(subject string, ttl time.Duration, roles ...auth.Role) (string, error) {
	return auth.Mint(m.secret, subject, roles, ttl, time.Now())
}

// SignToken signs any claims with the manager's secret (HS256): tokens MintToken would not make,
// such as one without an id (jti), as managers minted before tokens could be revoked.
func (m *Manager) SignToken(claims jwt.MapClaims) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(m.secret)
}

// LogTail is the last n lines of the manager's log.
func (m *Manager) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(m.Log.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ClusterNames are the registered clusters' names, in registration order.
func (m *Manager) ClusterNames() []string {
	out := make([]string, len(m.Clusters))
	for i, c := range m.Clusters {
		out[i] = c.Name
	}
	return out
}
