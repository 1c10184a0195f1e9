package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Defaults of Config.
const (
	DefaultMaxConcurrent    = 20
	DefaultLease            = 15 * time.Second
	DefaultPoll             = time.Second
	DefaultHealthInterval   = 30 * time.Second
	DefaultFailureThreshold = 3
	DefaultBlueRetention    = 24 * time.Hour
	DefaultInstallTimeout   = 5 * time.Minute
	DefaultApprovalTTL      = 72 * time.Hour
	DefaultBakeWindow       = api.DefaultBakeWindow
	// DefaultMaxParallelInstalls bounds one replica's Helm calls in flight: each holds its own
	// clients, discovery and release data (about 8 MiB), so 20 Direct deployments to 100
	// clusters each would otherwise hold 2,000 at once.
	DefaultMaxParallelInstalls = 32
)

// Clusters reaches registered clusters (clusters.Manager).
type Clusters interface {
	RESTConfig(ctx context.Context, name string) (*rest.Config, error)
}

// Charts fetches an operator's chart at a version (operators.Charts).
type Charts interface {
	Fetch(ctx context.Context, ref operators.ChartRef, version string) (*operators.Chart, error)
}

// Config is an engine's dependencies and settings; zero settings take the defaults.
type Config struct {
	Store    store.Store
	Clusters Clusters
	Charts   Charts
	// Credentials reads an operator's chart source credentials (package sourceauth); nil: every
	// chart is downloaded anonymously.
	Credentials func(ctx context.Context, op *store.Operator) (operators.Credentials, error)
	// Prometheus reads a cluster's Prometheus settings, opened (analysis.Lookup; store.ErrNotFound
	// when the cluster has none); nil: deployments with analyses are refused.
	Prometheus func(ctx context.Context, cluster string) (analysis.Prometheus, error)
	// Checker runs health checks (nil: a checker with the defaults).
	Checker *health.Checker
	// Notifier mails pending approvals (nil: no mail; approvals still work through the API).
	Notifier *notify.Notifier
	// Notifications is told, in the same transaction, of status changes and health checks
	// (nil: nobody is told).
	Notifications Notifications
	// Policy decides which approvals a deployment needs.
	Policy approvals.Policy
	Logger *slog.Logger
	// Now is the clock (tests run the strategies with periods of seconds).
	Now func() time.Time

	// ReplicaID names this replica in claims and leases (default: host name and a random suffix).
	ReplicaID string
	// MaxConcurrent deployments running at once across replicas; more wait Queued.
	MaxConcurrent int
	// Lease is how long a claim holds without renewal: a dead replica's work resumes elsewhere
	// within about this long.
	Lease time.Duration
	// Poll is how often the loop looks for due deployments (a local Wake looks at once).
	Poll time.Duration
	// HealthInterval is how often each live (operator, cluster) is checked; FailureThreshold
	// consecutive Unhealthy checks roll its deployment back.
	HealthInterval   time.Duration
	FailureThreshold int
	// BlueRetention is how long BlueGreen keeps blue after the switch; SwitchMonitor how long
	// it watches green after the switch (0: the plan's default, 5 minutes).
	BlueRetention time.Duration
	SwitchMonitor time.Duration
	// InstallTimeout bounds one cluster's install, upgrade or rollback, readiness included.
	InstallTimeout time.Duration
	// MaxParallelInstalls bounds this replica's installs, rollbacks and switches in flight, over
	// all its deployments (a stage's parallelClusters still applies within it).
	MaxParallelInstalls int
	// ApprovalTTL is how long an approval request stays open before it expires.
	ApprovalTTL time.Duration
	// BakeWindow is the bake window of a request without bakeWindow (--bake-window): 0 means
	// DefaultBakeWindow, a negative value none (the flag's 0).
	BakeWindow time.Duration
	// HealthLoop turns the periodic health checks of live releases on (serve: on).
	HealthLoop bool
	// TestHoldScale is for tests and benchmarks only: manager serve has no flag for it, a
	// deployment must never watch its clusters for less than it asked. Every stage's hold and
	// pause (evaluationPeriod, validationPeriod, pauseBetweenClusters, the switch monitor) is
	// multiplied by it, so a benchmark runs the design's PT5M evaluations in seconds and projects
	// the real time (BenchmarkCanaryDesign). 0 means 1; otherwise 0 < scale ≤ 1.
	TestHoldScale float64
}

func (c Config) withDefaults() (Config, error) {
	if c.Store == nil {
		return c, errors.New("engine: no store")
	}
	if c.Checker == nil {
		c.Checker = health.NewChecker(health.Config{Now: c.Now, Logger: c.Logger})
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ReplicaID == "" {
		host, _ := os.Hostname()
		c.ReplicaID = host + "-" + uuid.NewString()[:8]
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = DefaultHealthInterval
	}
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = DefaultFailureThreshold
	}
	if c.BlueRetention <= 0 {
		c.BlueRetention = DefaultBlueRetention
	}
	if c.InstallTimeout <= 0 {
		c.InstallTimeout = DefaultInstallTimeout
	}
	if c.MaxParallelInstalls <= 0 {
		c.MaxParallelInstalls = DefaultMaxParallelInstalls
	}
	if c.ApprovalTTL <= 0 {
		c.ApprovalTTL = DefaultApprovalTTL
	}
	switch {
	case c.BakeWindow == 0:
		c.BakeWindow = DefaultBakeWindow
	case c.BakeWindow > api.MaxPeriod:
		return c, fmt.Errorf("engine: BakeWindow %s: at most %s", c.BakeWindow, api.MaxPeriod)
	}
	if !(c.TestHoldScale >= 0 && c.TestHoldScale <= 1) {
		return c, fmt.Errorf("engine: TestHoldScale %v: want 0 < scale ≤ 1 (0: real time)", c.TestHoldScale)
	}
	return c, c.Policy.Validate()
}
