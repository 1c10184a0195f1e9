package devenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/slipway-dev/slipway/internal/devimage"
)

// Files the dev environment writes for the manager's users, in the state directory.
const (
	// ManagerURLFile holds the manager's base URL (https://127.0.0.1:8443).
	ManagerURLFile = "manager.url"
	// ManagerTokenFile holds an Admin token for the manager, valid for ManagerTokenTTL.
	ManagerTokenFile = "manager.token"
	// ManagerCAFile is the manager's self-signed certificate, relative to the state directory:
	// curl --cacert verifies the manager with it instead of -k.
	ManagerCAFile = managerStateDir + "/" + managerCertFile
	// ManagerTokenTTL is how long the written token is valid.
	ManagerTokenTTL = 24 * time.Hour
)

// manager is the running operator manager.
type manager struct {
	files managerFiles
	cmd   *exec.Cmd
	done  chan error
	api   *managerAPI
	// token is the Admin token written to manager.token; statusToken a Viewer token of its own
	// subject for the status view, so its polling does not use the user's rate limit.
	token, statusToken string
	log                string
	// deploymentID is the sample deployment make dev submitted.
	deploymentID string
	// chartDir is the sample operator's chart, published again later (laterversion.go).
	chartDir string
	// bin is the manager binary (login-link mints the web UI's sign-in link with it).
	bin string
}

// startManager writes fresh secrets, starts `manager serve` on embedded SQLite and waits for its
// /health. Env.Stop stops it.
func (e *Env) startManager(ctx context.Context) error {
	bin := e.opts.ManagerBinary
	if bin == "" {
		root, err := devimage.ModuleRoot()
		if err != nil {
			return err
		}
		if bin, err = filepath.Abs(filepath.Join(e.opts.Dir, "bin", "manager")); err != nil {
			return err
		}
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/manager")
		build.Dir = root
		build.Stdout, build.Stderr = e.opts.Out, e.opts.Out
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the manager: %w", err)
		}
	}
	files, err := writeManagerSecrets(e.opts.Dir, time.Now())
	if err != nil {
		return err
	}
	m := &manager{files: files, bin: bin, log: filepath.Join(e.opts.Dir, "logs", "manager.log")}
	if m.token, err = mintToken(ctx, bin, files.jwtSecret, "dev-admin", "Admin", ManagerTokenTTL); err != nil {
		return err
	}
	if m.statusToken, err = mintToken(ctx, bin, files.jwtSecret, "devenv-status", "Viewer", ManagerTokenTTL); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files.certPEM) {
		return errors.New("the manager's certificate does not parse")
	}
	m.api = newManagerAPI(managerURL(e.opts.ManagerAddr), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})

	logf, err := os.OpenFile(m.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, e.managerArgs(files)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("starting the manager: %w", err)
	}
	m.cmd = cmd
	m.done = make(chan error, 1)
	go func() { m.done <- cmd.Wait(); close(m.done); _ = logf.Close() }()
	e.manager = m
	return m.waitHealthy(ctx)
}

// managerArgs are the flags of `manager serve` in the dev environment.
func (e *Env) managerArgs(f managerFiles) []string {
	return []string{"serve",
		"--database-path=" + f.database,
		"--address=" + e.opts.ManagerAddr,
		"--metrics-address=" + e.opts.ManagerMetricsAddr,
		"--tls-cert-file=" + f.cert,
		"--tls-key-file=" + f.key,
		"--jwt-secret-file=" + f.jwtSecret,
		"--encryption-key-file=" + f.keys,
		"--log-format=text",
		// The local registry speaks plain HTTP.
		"--plain-http-registries=" + e.opts.RegistryAddr,
		// A dev session shows a cluster that stops answering within seconds, not a minute.
		"--cluster-health-interval=10s",
		// The status view follows the sample deployment's health every 10 s, not 30.
		"--operator-health-interval=10s",
		// The chart version published after start shows within 30 s, not 10 minutes.
		"--operator-refresh-interval=" + DevRefreshInterval.String(),
		// make dev has one cluster, in Dev, and one Admin: a deployment from the web UI or the CLI
		// (slipway deploy … --watch) goes straight through; Staging and Production keep the
		// approval workflow (docs/development.md, "A deployment in make dev").
		"--approval-environments=Staging,Production",
		"--shutdown-grace=5s",
	}
}

// managerURL is the base URL of a manager listening on addr; a wildcard host is reached on
// 127.0.0.1, which the certificate names.
func managerURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "https://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, port)
}

// mintToken runs `manager token` for subject with role, valid for ttl.
func mintToken(ctx context.Context, bin, secretFile, subject, role string, ttl time.Duration) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "token", "--jwt-secret-file="+secretFile, "--subject="+subject, "--role="+role, "--ttl="+ttl.String())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("minting a %s token with %s token: %w: %s", role, bin, err, strings.TrimSpace(stderr.String()))
	}
	tok := strings.TrimSpace(stdout.String())
	if strings.Count(tok, ".") != 2 {
		return "", fmt.Errorf("%s token printed %q, not a JWT", bin, tok)
	}
	return tok, nil
}

// waitHealthy waits for GET /health to answer 200.
func (m *manager) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last := ""
	for {
		var h struct{ Status, Database string }
		err := m.api.call(ctx, "GET", "/health", "", nil, &h)
		if err == nil {
			return nil
		}
		last = err.Error()
		select {
		case err := <-m.done:
			return fmt.Errorf("the manager exited (%w); the end of %s:\n%s", err, m.log, tail(m.log, 15))
		case <-ctx.Done():
			return fmt.Errorf("the manager did not answer %s/health: %w; its last answer: %s\nthe end of %s:\n%s", m.api.base, ctx.Err(), last, m.log, tail(m.log, 15))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop ends the manager gracefully (SIGTERM), or kills it after 20 seconds.
func (m *manager) stop() error {
	if m == nil || m.cmd == nil || m.cmd.Process == nil {
		return nil
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-m.done:
		return ignoreSignalExit(err)
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		return ignoreSignalExit(<-m.done)
	}
}

// writeManagerAccess writes manager.url and manager.token (0600) into dir.
func writeManagerAccess(dir, url, token string) error {
	if err := os.WriteFile(filepath.Join(dir, ManagerURLFile), []byte(url+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ManagerTokenFile), []byte(token+"\n"), 0o600)
}

// runManager publishes the sample operator's chart, starts the manager, registers the control
// plane and the sample operator with it, and writes manager.url and manager.token.
func (e *Env) runManager(ctx context.Context, step func(string, ...any)) error {
	// A failed start leaves no previous run's URL, token, link or CLI config behind to mislead.
	for _, f := range []string{ManagerURLFile, ManagerTokenFile, UIURLFile, CLIConfigFile} {
		if err := os.Remove(filepath.Join(e.opts.Dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	chartDir, err := e.chartDir()
	if err != nil {
		return err
	}
	repository, err := publishSampleOperator(ctx, e.opts.RegistryAddr, chartDir, SampleOperatorVersions)
	if err != nil {
		return err
	}
	step("Published the sample operator chart %s/%s (versions %s)", repository, SampleOperator, strings.Join(SampleOperatorVersions, ", "))

	step("Starting the operator manager on %s (metrics on %s, SQLite in %s)", managerURL(e.opts.ManagerAddr),
		e.opts.ManagerMetricsAddr, filepath.Join(e.opts.Dir, managerStateDir, managerDatabaseFile))
	if err := e.startManager(ctx); err != nil {
		return err
	}
	m := e.manager
	m.chartDir = chartDir
	c, err := m.api.registerCluster(ctx, m.token, DevCluster, filepath.Join(e.opts.Dir, kubeconfigFile))
	if err != nil {
		return fmt.Errorf("%w\nthe end of %s:\n%s", err, m.log, tail(m.log, 15))
	}
	step("Registered the control plane with the manager as cluster %s (%s, Kubernetes %s, %s)", c.Name, c.Environment, c.KubernetesVersion, c.Health)
	op, err := m.api.registerOperator(ctx, m.token, repository, e.sampleValues())
	if err != nil {
		return fmt.Errorf("%w\nthe end of %s:\n%s", err, m.log, tail(m.log, 15))
	}
	step("Registered the operator %s with the manager (namespace %s, chart %s, versions %s)", op.Name, op.Namespace,
		op.Chart.Repository, strings.Join(op.Versions, ", "))
	if err := e.deploySample(ctx, chartDir, step); err != nil {
		return fmt.Errorf("%w\nthe end of %s:\n%s", err, m.log, tail(m.log, 15))
	}
	if err := writeManagerAccess(e.opts.Dir, m.api.base, m.token); err != nil {
		return err
	}
	return writeCockpitAccess(ctx, e.opts.Dir, m)
}

// deploySample installs the sample operator's release at SampleInstalledVersion, unless it runs
// the operator already (the real node, operatorpods.go), as make dev's record of the operator it
// runs (adopting the RBAC and admission policies make dev installed for
// it), waits until the samples' custom resources are Ready, then submits a Direct deployment,
// health checks on, of SampleDeploymentVersion to the dev cluster: an upgrade, whose rollback goes
// back to the installed revision instead of uninstalling the operator's RBAC. The manager's database is new
// on every start, so the deployment is submitted afresh each time; the status view follows it.
func (e *Env) deploySample(ctx context.Context, chartDir string, step func(string, ...any)) error {
	values := e.sampleValues()
	if !e.releaseInstalled {
		rev, adopted, err := installSampleRelease(ctx, e.cp.Config, e.cp.Client, chartDir, values)
		if err != nil {
			return err
		}
		e.releaseInstalled = true
		step("Installed release %s/%s %s (revision %d; adopted %d objects make dev installed for the operator: RBAC and Catalyst's admission policies)", SampleOperatorNamespace,
			SampleOperator, SampleInstalledVersion, rev, adopted)
	}
	if notReady := e.waitSamplesReady(ctx, 3*time.Minute); notReady != "" {
		step("Sample not Ready yet (%s): the deployment's health check will see it", notReady)
	}
	m := e.manager
	d, err := m.api.createDeployment(ctx, m.token, DevCluster, SampleDeploymentVersion, values)
	if err != nil {
		return err
	}
	m.deploymentID = d.ID
	step("Submitted a Direct deployment of %s %s to cluster %s, health checks on: %s (%s)", SampleOperator,
		SampleDeploymentVersion, DevCluster, d.ID, d.Status)
	return nil
}

// printManager prints the manager's URL, its token and a command that calls it.
func (e *Env) printManager(out io.Writer) {
	if e.manager == nil {
		return
	}
	dir := e.opts.Dir
	fmt.Fprintf(out, "  manager:    %s  (metrics http://%s/metrics; URL in %s, CA %s)\n", e.manager.api.base,
		e.opts.ManagerMetricsAddr, filepath.Join(dir, ManagerURLFile), filepath.Join(dir, ManagerCAFile))
	fmt.Fprintf(out, "  token:      %s\n              (Admin, valid %d h; in %s)\n", e.manager.token, int(ManagerTokenTTL.Hours()), filepath.Join(dir, ManagerTokenFile))
	fmt.Fprintf(out, "  web UI:     %s/  (sign in once with the link in %s; `.slipway/bin/devenv ui-link` writes a new one)\n",
		e.manager.api.base, filepath.Join(dir, UIURLFile))
	fmt.Fprintf(out, "  CLI:        export SLIPWAY_CONFIG=%s; %s deployment list  (context %s, KUBECONFIG=%s for the in-cluster verbs)\n",
		filepath.Join(dir, CLIConfigFile), CLIBinary, CLIContext, filepath.Join(dir, kubeconfigFile))
	fmt.Fprintf(out, "  curl:       curl -k -H \"Authorization: Bearer $(cat %s)\" \"$(cat %s)/api/v1/clusters\"\n",
		filepath.Join(dir, ManagerTokenFile), filepath.Join(dir, ManagerURLFile))
	if l := e.later; l != nil {
		fmt.Fprintf(out, "  later:      %s %s is published to the registry at %s; the manager reads chart sources every %s (the status view shows it appear)\n",
			SampleOperator, SampleLaterVersion, l.at.Format(time.TimeOnly), DevRefreshInterval)
	}
	if id := e.manager.deploymentID; id != "" {
		fmt.Fprintf(out, "  deployment: %s  (Direct, %s %s to cluster %s, health checks on; the status view follows it)\n",
			id, SampleOperator, SampleDeploymentVersion, DevCluster)
		fmt.Fprintf(out, "  events:     curl -k -N -H \"Accept: text/event-stream\" -H \"Authorization: Bearer $(cat %s)\" \"$(cat %s)/api/v1/deployments/%s/events\"\n",
			filepath.Join(dir, ManagerTokenFile), filepath.Join(dir, ManagerURLFile), id)
		fmt.Fprintf(out, "  watch:      SLIPWAY_CONFIG=%s %s deployment watch %s\n", filepath.Join(dir, CLIConfigFile), CLIBinary, id)
	}
}

// chartDir is the chart published as the sample operator: Options.ChartDir, else charts/slipway
// of the repository around the working directory.
func (e *Env) chartDir() (string, error) {
	if e.opts.ChartDir != "" {
		return e.opts.ChartDir, nil
	}
	return findChartDir()
}
