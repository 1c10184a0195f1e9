package command

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func parse(args ...string) (*flag.FlagSet, *Flags, error) {
	fs, f := NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, f, Parse(fs, args)
}

// TestParse_SetsEveryPartsFlags: the manager's, a controller's, the logger's and
// controller-runtime's flags are all in the one set and land where the operator reads them.
func TestParse_SetsEveryPartsFlags(t *testing.T) {
	fs, f, err := parse("--controllers=webapp,catalyst", "--kube-api-qps=50", "--leader-elect=false",
		"--leader-election-lease-duration=30s", "--catalyst-build-namespace=builds", "--zap-log-level=debug",
		"--kubeconfig=/tmp/kubeconfig", "--webhook-cert-self-managed=false")
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options
	if strings.Join(o.Controllers, ",") != "webapp,catalyst" || o.QPS != 50 || o.LeaderElect || o.LeaseDuration != 30*time.Second {
		t.Errorf("options %+v", o)
	}
	if f.Zap.Level == nil {
		t.Error("--zap-log-level did not reach the logger's options")
	}
	for name, want := range map[string]string{"catalyst-build-namespace": "builds", "kubeconfig": "/tmp/kubeconfig", "webhook-cert-self-managed": "false"} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
	if len(f.Controllers) != 3 {
		t.Errorf("%d controllers, want werfbundle, webapp and catalyst", len(f.Controllers))
	}
}

func TestParse_RefusesWhatTheOperatorWouldNotRunWith(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--leader-elect=true", "--catalyst-build-ns=x"}, "flag provided but not defined"},
		{"bad duration", []string{"--leader-election-lease-duration=15"}, "invalid value"},
		{"bad number", []string{"--kube-api-burst=1e+06"}, "invalid value"},
		{"a lookup with no time limit", []string{"--catalyst-render-lookup-timeout=0s"}, "invalid value \"0s\" for flag -catalyst-render-lookup-timeout: 0s is not a positive duration"},
		{"a lookup with no size limit", []string{"--catalyst-render-lookup-max-bytes=-1"}, "invalid value \"-1\" for flag -catalyst-render-lookup-max-bytes: -1 is not a positive number of bytes"},
		{"bad log level", []string{"--zap-log-level=loud"}, "invalid value"},
		{"an argument that is not a flag hides the rest", []string{"--leader-elect=true", "slipway", "--bogus"}, `argument "slipway" is not a flag`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parse(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestNewFlagSet_SetsDoNotShareValues: two flag sets hold separate values, so tests can parse
// several command lines.
func TestNewFlagSet_SetsDoNotShareValues(t *testing.T) {
	a, _, err := parse("--catalyst-build-namespace=a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parse("--catalyst-build-namespace=b"); err != nil {
		t.Fatal(err)
	}
	if got := a.Lookup("catalyst-build-namespace").Value.String(); got != "a" {
		t.Errorf("the first set's value became %q", got)
	}
}
