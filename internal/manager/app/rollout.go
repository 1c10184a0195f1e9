package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/rollout/engine"
)

// envSMTPPassword holds the SMTP password (a secret: never a flag).
const envSMTPPassword = "SLIPWAY_MANAGER_SMTP_PASSWORD"

// rolloutOptions are the rollout engine's and the approval mail's flags.
type rolloutOptions struct {
	replicaID        string
	maxConcurrent    int
	lease            time.Duration
	healthInterval   time.Duration
	failureThreshold int
	blueRetention    time.Duration
	switchMonitor    time.Duration
	installTimeout   time.Duration
	parallelInstalls int
	approvalTTL      time.Duration
	bakeWindow       time.Duration
	upgradeLevel     string
	approverCounts   string
	approvalEnvs     string

	publicURL      string
	smtpAddress    string
	smtpFrom       string
	smtpUsername   string
	smtpCAFile     string
	mailRecipients string
}

func (o *rolloutOptions) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.replicaID, "replica-id", "", "this replica's name in deployment claims and leases (default: host name and a random suffix)")
	fs.IntVar(&o.maxConcurrent, "max-concurrent-deployments", engine.DefaultMaxConcurrent, "deployments running at once across replicas; more wait Queued")
	fs.DurationVar(&o.lease, "deployment-lease", engine.DefaultLease, "how long a replica's claim on a deployment holds without renewal: a dead replica's deployments resume elsewhere within about this long")
	fs.DurationVar(&o.healthInterval, "operator-health-interval", engine.DefaultHealthInterval, "how often every deployed operator is health-checked on every cluster")
	fs.IntVar(&o.failureThreshold, "rollback-after-failures", engine.DefaultFailureThreshold, "consecutive failed health checks that roll a deployment back")
	fs.DurationVar(&o.blueRetention, "blue-retention", engine.DefaultBlueRetention, "how long BlueGreen keeps blue after the switch, as the instant rollback target")
	fs.DurationVar(&o.switchMonitor, "switch-monitor", 5*time.Minute, "how long BlueGreen watches green after the switch")
	fs.DurationVar(&o.installTimeout, "install-timeout", engine.DefaultInstallTimeout, "the longest one cluster's install, upgrade or rollback may take, readiness included")
	fs.IntVar(&o.parallelInstalls, "max-parallel-installs", engine.DefaultMaxParallelInstalls, "this replica's Helm installs, rollbacks and switches in flight at once, over all deployments (each holds about 8 MiB)")
	fs.DurationVar(&o.approvalTTL, "approval-ttl", engine.DefaultApprovalTTL, "how long an approval request stays open before it expires (and its deployment fails)")
	fs.DurationVar(&o.bakeWindow, "bake-window", engine.DefaultBakeWindow, "how long after it completes a deployment is still watched as its clusters' change, when its request gives no bakeWindow (0: none; at most 24h)")
	fs.StringVar(&o.upgradeLevel, "approval-upgrade-level", string(approvals.DefaultLevel), "the smallest version change that needs an Admin's approval: major, minor or patch (patch: every upgrade)")
	fs.StringVar(&o.approvalEnvs, "approval-environments", "Dev,Staging,Production", "the environments whose deployments go through the approval workflow (comma-separated, or none); clusters of the others ask no approval")
	fs.StringVar(&o.approverCounts, "approval-counts", "", "distinct approvers per kind (multi-level), e.g. \"production=2,breakingCRD=1\"")
	fs.StringVar(&o.publicURL, "public-url", "", "the manager's URL as people reach it: the approve/reject links in approval mail")
	fs.StringVar(&o.smtpAddress, "smtp-address", "", "SMTP submission server (host:port) for approval mail; empty: no mail. STARTTLS is required")
	fs.StringVar(&o.smtpFrom, "smtp-from", "", "the approval mail's sender, e.g. \"Slipway <slipway@example.com>\"")
	fs.StringVar(&o.smtpUsername, "smtp-username", "", "SMTP AUTH PLAIN user (password in $"+envSMTPPassword+")")
	fs.StringVar(&o.smtpCAFile, "smtp-ca-file", "", "PEM CA bundle that verifies the SMTP server (default: the system's roots)")
	fs.StringVar(&o.mailRecipients, "approval-recipients", "", "who is mailed per required role: \"Admin=a@x.org,b@x.org;EnvironmentOwner:Production=c@x.org;*=audit@x.org\"")
}

// engineBakeWindow is --bake-window as engine.Config.BakeWindow takes it (whose 0 is the
// default, and a negative value none).
func (o *rolloutOptions) engineBakeWindow() (time.Duration, error) {
	switch {
	case o.bakeWindow < 0 || o.bakeWindow > api.MaxPeriod:
		return 0, fmt.Errorf("--bake-window %s: want 0 (none) to %s", o.bakeWindow, api.MaxPeriod)
	case o.bakeWindow == 0:
		return -1, nil
	}
	return o.bakeWindow, nil
}

// policy is the approval policy the flags describe.
func (o *rolloutOptions) policy() (approvals.Policy, error) {
	counts, err := approvals.ParseCounts(o.approverCounts)
	if err != nil {
		return approvals.Policy{}, fmt.Errorf("--approval-counts: %w", err)
	}
	disabled, err := approvals.ParseEnvironments(o.approvalEnvs)
	if err != nil {
		return approvals.Policy{}, fmt.Errorf("--approval-environments: %w", err)
	}
	p := approvals.Policy{UpgradeLevel: approvals.Level(o.upgradeLevel), Count: counts, Disabled: disabled}
	if err := p.Validate(); err != nil {
		return approvals.Policy{}, fmt.Errorf("--approval-upgrade-level/--approval-counts: %w", err)
	}
	return p, nil
}

// notifier is the approval mail's sender, nil when --smtp-address is not set. onResult learns
// each mail's outcome (the engine's MailResult).
func (o *rolloutOptions) notifier(log *slog.Logger, onResult func(notify.Result)) (*notify.Notifier, error) {
	if o.smtpAddress == "" {
		if o.mailRecipients != "" {
			return nil, errors.New("--approval-recipients needs --smtp-address")
		}
		return nil, nil
	}
	if o.smtpFrom == "" || o.publicURL == "" || o.mailRecipients == "" {
		return nil, errors.New("--smtp-address needs --smtp-from, --public-url and --approval-recipients")
	}
	recipients, err := parseRecipients(o.mailRecipients)
	if err != nil {
		return nil, fmt.Errorf("--approval-recipients: %w", err)
	}
	m, err := o.mailer()
	if err != nil {
		return nil, err
	}
	return notify.New(notify.Config{Sender: m, BaseURL: o.publicURL, Recipients: recipients, Log: log, OnResult: onResult})
}

// mailer is the SMTP submission client --smtp-* describe: the approval mail's and the smtp
// notification channels'.
func (o *rolloutOptions) mailer() (*notify.Mailer, error) {
	m := &notify.Mailer{Addr: o.smtpAddress, From: o.smtpFrom, Username: o.smtpUsername, Password: os.Getenv(envSMTPPassword)}
	if o.smtpUsername != "" && m.Password == "" {
		return nil, fmt.Errorf("--smtp-username is set but $%s is empty", envSMTPPassword)
	}
	if o.smtpCAFile != "" {
		pem, err := os.ReadFile(o.smtpCAFile)
		if err != nil {
			return nil, fmt.Errorf("--smtp-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--smtp-ca-file %s: no PEM certificate in it", o.smtpCAFile)
		}
		m.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return m, nil
}

// parseRecipients reads "Role=a,b;Role2=c;*=d".
func parseRecipients(s string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		role, list, ok := strings.Cut(part, "=")
		role = strings.TrimSpace(role)
		if !ok || role == "" {
			return nil, fmt.Errorf("%q: want Role=address,address", part)
		}
		for _, a := range strings.Split(list, ",") {
			if a = strings.TrimSpace(a); a != "" {
				if !strings.Contains(a, "@") {
					return nil, fmt.Errorf("%q is not a mail address", a)
				}
				out[role] = append(out[role], a)
			}
		}
		if len(out[role]) == 0 {
			return nil, fmt.Errorf("role %s has no address", role)
		}
	}
	return out, nil
}
