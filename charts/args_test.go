package charts_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/operator/command"
)

// renderNS is the namespace render installs into, which $(POD_NAMESPACE) becomes.
const renderNS = "slipway"

// TestChart_ArgsAreFlagsTheOperatorAccepts renders the chart for values sets that between them
// set every values-driven argument, in both forms (a Deployment per controller, and the single
// Deployment), and parses every Deployment's arguments with the operator's own flag set
// (internal/operator/command, as cmd/operator does): an unknown flag, a value the flag refuses, or
// an argument that is not a flag fails. Each set also checks that the values reach the flags they
// are meant for, on every Deployment that renders the flag.
func TestChart_ArgsAreFlagsTheOperatorAccepts(t *testing.T) {
	rendered := map[string]bool{}
	for _, tc := range []struct {
		name   string
		values string
		// want are flag values after parsing, on every Deployment that renders the flag (at
		// least one must); absent flags keep the operator's default.
		want map[string]string
	}{
		{"defaults (every controller)", "", map[string]string{
			"namespace": renderNS, "leader-elect": "true", "leader-election-lease-duration": "15s",
			"leader-election-renew-deadline": "10s", "leader-election-retry-period": "2s", "metrics-bind-address": ":8443",
			"metrics-secure": "true", "webhook-port": "9443", "webhook-cert-self-managed": "true", "zap-log-level": "info",
			"catalyst-build-namespace": "slipway-builds", "catalyst-deployer-namespace": "slipway-catalyst-deployers",
			"werfbundle-webhook-bind-address": "", "werfbundle-allow-cross-namespace": "false",
		}},
		{"WerfBundle and WebApp with the receiver (the install test's)", "controllers: [werfbundle, webapp]\nreplicas: 1\nreceiver: {enabled: true}\n",
			map[string]string{"werfbundle-webhook-bind-address": ":9292", "werfbundle-webhook-secret-file": "/etc/slipway/receiver/secret"}},
		{"receiver on another port, cross-namespace bundles", "controllers: [werfbundle]\nreceiver: {enabled: true, port: 8080}\nwerfbundle: {allowCrossNamespace: true}\n",
			map[string]string{"werfbundle-webhook-bind-address": ":8080", "werfbundle-allow-cross-namespace": "true"}},
		{"Catalyst alone with its own build and deployer namespaces", "controllers: [catalyst]\ncatalyst: {buildNamespace: {name: team-builds, podSecurity: privileged}, deployerNamespace: {name: team-deployers}}\n",
			map[string]string{"catalyst-build-namespace": "team-builds", "catalyst-deployer-namespace": "team-deployers"}},
		{"cert-manager", "webhook: {port: 10250, certManager: {enabled: true, issuerRef: {name: ca, kind: ClusterIssuer}}}\n",
			map[string]string{"webhook-cert-self-managed": "false", "webhook-port": "10250"}},
		{"API and event rate limits", "kubeAPIQPS: 50\nkubeAPIBurst: 100\neventQPS: 5\neventBurst: 20\n",
			map[string]string{"kube-api-qps": "50", "kube-api-burst": "100", "event-qps": "5", "event-burst": "20"}},
		{"fractional and unlimited rates", "kubeAPIQPS: -1\neventQPS: 0.5\n",
			map[string]string{"kube-api-qps": "-1", "event-qps": "0.5"}},
		{"large numbers", "kubeAPIQPS: 1000000\nkubeAPIBurst: 2000000\neventQPS: 1500000.5\neventBurst: 1000000\n",
			map[string]string{"kube-api-qps": "1e+06", "kube-api-burst": "2000000", "event-qps": "1.5000005e+06", "event-burst": "1000000"}},
		{"leader election, metrics and logging", "leaderElection: {enabled: false, leaseDuration: 1m, renewDeadline: 40s, retryPeriod: 5s}\n" +
			"metrics: {port: 9090, secure: false}\nlogLevel: debug\n",
			map[string]string{"leader-elect": "false", "leader-election-lease-duration": "1m0s", "leader-election-renew-deadline": "40s",
				"leader-election-retry-period": "5s", "metrics-bind-address": ":9090", "metrics-secure": "false", "zap-log-level": "debug"}},
		{"extra arguments", "extraArgs: [--webapp-resync-period=1m, --graceful-shutdown-timeout=20s]\n",
			map[string]string{"webapp-resync-period": "1m0s", "graceful-shutdown-timeout": "20s"}},
		{"single Deployment (every controller)", "singleDeployment: true\nreceiver: {enabled: true}\n", map[string]string{
			"leader-election-id": "slipway-operator.slipway.dev", "webhook-port": "9443", "werfbundle-webhook-bind-address": ":9292",
			"catalyst-build-namespace": "slipway-builds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, d := range deployments(t, render(t, tc.values)) {
				args := d.Spec.Template.Spec.Containers[0].Args
				fs, flags := parseArgs(t, args, renderNS)
				given := map[string]bool{}
				for _, a := range args {
					if m := argName.FindStringSubmatch(a); m != nil {
						given[m[1]], rendered[m[1]] = true, true
					}
				}
				for name, want := range tc.want {
					if !given[name] {
						continue
					}
					seen[name] = true
					if got := fs.Lookup(name).Value.String(); got != want {
						t.Errorf("%s: --%s = %q, want %q", d.Name, name, got, want)
					}
				}
				if got := fs.Lookup("leader-election-id").Value.String(); got != d.Name+".slipway.dev" {
					t.Errorf("%s: --leader-election-id = %q, want a Lease of its own", d.Name, got)
				}
				selected, err := flags.Options.Select(flags.Controllers)
				if err != nil {
					t.Errorf("%s: --controllers: %v", d.Name, err)
				}
				if n := len(selected); d.Name != "slipway-operator" && n != 1 {
					t.Errorf("%s runs %d controllers, want its own alone", d.Name, n)
				}
			}
			for name := range tc.want {
				if !seen[name] {
					t.Errorf("no Deployment renders --%s", name)
				}
			}
		})
	}
	// Every flag the template can write was rendered by some values set above, so none escapes
	// the parse.
	tmpl, err := os.ReadFile("slipway/templates/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range templateArg.FindAllStringSubmatch(string(tmpl), -1) {
		if !rendered[m[1]] {
			t.Errorf("--%s is in the template but no values set above renders it; add one", m[1])
		}
	}
}

var (
	argName     = regexp.MustCompile(`^--([a-z0-9-]+)`)
	templateArg = regexp.MustCompile(`(?m)^\s*- --([a-z0-9-]+)`)
)

// TestChart_ExtraArgsAreParsedToo: an extraArgs entry the operator does not know is caught by the
// same parse, so the test above would catch a wrong flag in any template.
func TestChart_ExtraArgsAreParsedToo(t *testing.T) {
	d := deployment(t, render(t, "extraArgs: [--webapp-resync=1m]\n"), "slipway-webapp")
	fs, _ := command.NewFlagSet("operator", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := command.Parse(fs, expandEnv(d.Spec.Template.Spec.Containers[0].Args, renderNS))
	if err == nil || !strings.Contains(err.Error(), "webapp-resync") {
		t.Errorf("parsing an unknown extra argument: %v, want it refused", err)
	}
}

// TestChart_ExtraArgsArePassedAsWritten: an extra argument holding JSON, ": " or " #" (a
// namespace annotation for --catalyst-namespace-annotation, say) reaches the operator as one
// argument, unchanged; rendered unquoted, YAML cut it at its first quote.
func TestChart_ExtraArgsArePassedAsWritten(t *testing.T) {
	arg := `--catalyst-namespace-annotation=scheduler.alpha.kubernetes.io/defaultTolerations=[{"key":"a","value":"b: c"}] # d`
	values, err := json.Marshal(map[string]any{"extraArgs": []string{arg}})
	if err != nil {
		t.Fatal(err)
	}
	args := deployment(t, render(t, string(values)), "slipway-catalyst").Spec.Template.Spec.Containers[0].Args
	if got := args[len(args)-1]; got != arg {
		t.Errorf("the last argument is %q, want %q", got, arg)
	}
	parseArgs(t, args, renderNS)
}

// parseArgs parses a container's args as the operator would, after the kubelet has expanded
// $(POD_NAMESPACE), and fails the test on any error.
func parseArgs(t *testing.T, args []string, namespace string) (*flag.FlagSet, *command.Flags) {
	t.Helper()
	fs, flags := command.NewFlagSet("operator", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	if err := command.Parse(fs, expandEnv(args, namespace)); err != nil {
		t.Fatalf("the operator refuses its arguments %q: %v", args, err)
	}
	return fs, flags
}

// expandEnv replaces $(POD_NAMESPACE), the one variable the operator's args use.
func expandEnv(args []string, namespace string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "$(POD_NAMESPACE)", namespace)
	}
	return out
}
