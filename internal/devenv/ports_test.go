package devenv

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
)

// hold listens on addr for the rest of the test; an address another program holds already is
// held just the same.
func hold(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if c, lerr := net.Dial("tcp", addr); lerr == nil {
			_ = c.Close()
		} else {
			t.Fatalf("%s is neither free nor held: %v", addr, err)
		}
		return
	}
	t.Cleanup(func() { _ = l.Close() })
}

// holdDefaultPorts holds every default port of the dev environment on 127.0.0.1 for the rest of
// the test, as a developer's own servers would.
func holdDefaultPorts(t *testing.T) {
	for _, a := range []string{DefaultRegistryAddr, DefaultGitAddr, DefaultProbeAddr, DefaultMetricsAddr,
		"127.0.0.1:" + strconv.Itoa(DefaultWebhookPort), DefaultManagerAddr, DefaultManagerMetricsAddr} {
		hold(t, a)
	}
}

func TestPorts_DefaultsInUseAreMovedAndNamed(t *testing.T) {
	holdDefaultPorts(t)
	var opts Options
	notes, err := opts.ports()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ got, def, env string }{
		{opts.RegistryAddr, DefaultRegistryAddr, EnvRegistryAddr},
		{opts.GitAddr, DefaultGitAddr, EnvGitAddr},
		{opts.ProbeAddr, DefaultProbeAddr, EnvProbeAddr},
		{opts.MetricsAddr, DefaultMetricsAddr, EnvMetricsAddr},
		{"127.0.0.1:" + strconv.Itoa(opts.WebhookPort), "127.0.0.1:" + strconv.Itoa(DefaultWebhookPort), EnvWebhookPort},
		{opts.ManagerAddr, DefaultManagerAddr, EnvManagerAddr},
		{opts.ManagerMetricsAddr, DefaultManagerMetricsAddr, EnvManagerMetricsAddr},
	} {
		if tc.got == tc.def || !strings.HasPrefix(tc.got, "127.0.0.1:") || strings.HasSuffix(tc.got, ":0") {
			t.Errorf("%s: got %q, want a free port on 127.0.0.1 other than %s", tc.env, tc.got, tc.def)
		}
		if !strings.Contains(strings.Join(notes, "\n"), tc.env) {
			t.Errorf("no note names %s:\n%s", tc.env, strings.Join(notes, "\n"))
		}
		// The chosen port is free again for the process that listens on it.
		l, err := net.Listen("tcp", tc.got)
		if err != nil {
			t.Errorf("%s: chosen %s is not free: %v", tc.env, tc.got, err)
			continue
		}
		_ = l.Close()
	}
}

func TestPorts_FixedAddressInUseFailsNamingItAndItsVariable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().String()
	_, port, _ := net.SplitHostPort(busy)
	p, _ := strconv.Atoi(port)

	for _, tc := range []struct {
		name string
		set  func(*Options)
		want []string
	}{
		{"metrics", func(o *Options) { o.MetricsAddr = busy }, []string{"operator metrics", busy, EnvMetricsAddr, "--metrics-addr"}},
		{"probes", func(o *Options) { o.ProbeAddr = busy }, []string{"operator health probes", busy, EnvProbeAddr, "--probe-addr"}},
		{"registry", func(o *Options) { o.RegistryAddr = busy }, []string{"OCI registry", busy, EnvRegistryAddr, "--registry-addr"}},
		{"git", func(o *Options) { o.GitAddr = busy }, []string{"git server", busy, EnvGitAddr, "--git-addr"}},
		{"webhooks", func(o *Options) { o.WebhookPort = p }, []string{"operator webhooks", ":" + port, EnvWebhookPort, "--webhook-port"}},
		{"manager", func(o *Options) { o.ManagerAddr = busy }, []string{"manager API", busy, EnvManagerAddr, "--manager-addr"}},
		{"manager metrics", func(o *Options) { o.ManagerMetricsAddr = busy }, []string{"manager metrics", busy, EnvManagerMetricsAddr, "--manager-metrics-addr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts Options
			tc.set(&opts)
			_, err := opts.ports()
			if err == nil {
				t.Fatal("no error for an address in use")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// A fixed port in use fails Start before anything is started.
func TestStart_FixedPortInUseFailsBeforeAnythingStarts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out bytes.Buffer
	env, err := Start(t.Context(), Options{Dir: t.TempDir(), MetricsAddr: l.Addr().String(), Out: &out})
	if err == nil {
		_ = env.Stop()
		t.Fatal("Start succeeded with the metrics address in use")
	}
	if !strings.Contains(err.Error(), EnvMetricsAddr) || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("error %q does not name the address and %s", err, EnvMetricsAddr)
	}
	if out.Len() != 0 {
		t.Errorf("Start began before failing:\n%s", out.String())
	}
}

func TestPorts_MalformedAddressesFailNamingTheirVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Options)
		want []string
	}{
		{"no port", func(o *Options) { o.MetricsAddr = "localhost" }, []string{`"localhost"`, EnvMetricsAddr, "--metrics-addr", "not host:port"}},
		{"a URL", func(o *Options) { o.RegistryAddr = "http://127.0.0.1:5001" }, []string{EnvRegistryAddr, "not host:port"}},
		{"a manager URL", func(o *Options) { o.ManagerAddr = "https://127.0.0.1:8443" }, []string{EnvManagerAddr, "--manager-addr", "not host:port"}},
		{"port out of range", func(o *Options) { o.WebhookPort = 70000 }, []string{"70000", EnvWebhookPort, "--webhook-port", "not a port number"}},
		{"negative port", func(o *Options) { o.WebhookPort = -1 }, []string{EnvWebhookPort, "not a port number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts Options
			tc.set(&opts)
			_, err := opts.ports()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestPorts_RealNodeLeavesTheOperatorsHostPortsAlone is make dev with the real node, where the
// operator runs in pods: its host ports (probes, metrics, webhooks) are neither checked nor
// taken, so a program holding them is no reason to move anything; one given anyway is dropped
// with a note naming its variable. The others are resolved as without the node.
func TestPorts_RealNodeLeavesTheOperatorsHostPortsAlone(t *testing.T) {
	holdDefaultPorts(t)
	opts := Options{RealNode: true}
	notes, err := opts.ports()
	if err != nil {
		t.Fatal(err)
	}
	if opts.ProbeAddr != "" || opts.MetricsAddr != "" || opts.WebhookPort != 0 {
		t.Errorf("the operator's host addresses were resolved with the real node: probes %q, metrics %q, webhooks %d",
			opts.ProbeAddr, opts.MetricsAddr, opts.WebhookPort)
	}
	all := strings.Join(notes, "\n")
	for _, env := range []string{EnvProbeAddr, EnvMetricsAddr, EnvWebhookPort} {
		if strings.Contains(all, env) {
			t.Errorf("a note names %s, which the real node does not use:\n%s", env, all)
		}
	}
	if opts.RegistryAddr == DefaultRegistryAddr || opts.ManagerAddr == DefaultManagerAddr || !strings.Contains(all, EnvManagerAddr) {
		t.Errorf("the held registry and manager defaults were not moved with a note:\n%s", all)
	}

	given := Options{RealNode: true, ProbeAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", WebhookPort: 9443}
	notes, err = given.ports()
	if err != nil {
		t.Fatal(err)
	}
	all = strings.Join(notes, "\n")
	for _, env := range []string{EnvProbeAddr, EnvMetricsAddr, EnvWebhookPort} {
		if !strings.Contains(all, env+" or ") || !strings.Contains(all, "is not used: with the real node") {
			t.Errorf("no note says %s is not used with the real node:\n%s", env, all)
		}
	}
	if given.ProbeAddr != "" || given.MetricsAddr != "" || given.WebhookPort != 0 {
		t.Errorf("given operator addresses were kept with the real node: %q %q %d", given.ProbeAddr, given.MetricsAddr, given.WebhookPort)
	}
}
