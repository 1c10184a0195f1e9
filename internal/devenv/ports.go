package devenv

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Variables that fix an address of the dev environment (cmd/devenv reads them as its flags'
// defaults). An address left empty is chosen at start: the default when it is free, else any
// free port; a fixed address that is in use fails the start with the variable's name.
const (
	EnvRegistryAddr = "SLIPWAY_DEV_REGISTRY_ADDR"
	EnvGitAddr      = "SLIPWAY_DEV_GIT_ADDR"
	EnvProbeAddr    = "SLIPWAY_DEV_PROBE_ADDR"
	EnvMetricsAddr  = "SLIPWAY_DEV_METRICS_ADDR"
	EnvWebhookPort  = "SLIPWAY_DEV_WEBHOOK_PORT"
	// EnvManagerAddr and EnvManagerMetricsAddr fix the operator manager's API and metrics.
	EnvManagerAddr        = "SLIPWAY_DEV_MANAGER_ADDR"
	EnvManagerMetricsAddr = "SLIPWAY_DEV_MANAGER_METRICS_ADDR"
)

// Default addresses, used when free.
const (
	DefaultProbeAddr   = "127.0.0.1:8081"
	DefaultMetricsAddr = "127.0.0.1:8080"
	DefaultWebhookPort = 9443
	// DefaultManagerAddr is the operator manager's API, https://127.0.0.1:8443.
	DefaultManagerAddr        = "127.0.0.1:8443"
	DefaultManagerMetricsAddr = "127.0.0.1:9464"
)

// endpoint is one address the dev environment listens on.
type endpoint struct {
	what      string // "operator metrics"
	flag, env string // what fixes it
	def       string // preferred when free
	addr      *string
}

// allInterfaces is the host the webhook port is checked on: the operator's webhook server listens
// on every interface, so a program holding the port on any of them is in its way.
const allInterfaces = ""

// ports resolves every address of opts before anything starts: a fixed one must be free (else an
// error names the port and what moves it), an empty one becomes its default when free or else a
// free port. It returns a note for every address that was moved off its default, or given and
// not used (the operator's, with the real node).
func (opts *Options) ports() (notes []string, err error) {
	webhook := ""
	switch {
	case opts.WebhookPort < 0 || opts.WebhookPort > 65535:
		return nil, fmt.Errorf("the operator webhooks' port %d (%s or --webhook-port) is not a port number (1-65535; 0 or unset chooses one)",
			opts.WebhookPort, EnvWebhookPort)
	case opts.WebhookPort != 0:
		webhook = net.JoinHostPort(allInterfaces, strconv.Itoa(opts.WebhookPort))
	}
	eps := []endpoint{
		{"OCI registry", "--registry-addr", EnvRegistryAddr, DefaultRegistryAddr, &opts.RegistryAddr},
		{"git server", "--git-addr", EnvGitAddr, DefaultGitAddr, &opts.GitAddr},
		{"manager API", "--manager-addr", EnvManagerAddr, DefaultManagerAddr, &opts.ManagerAddr},
		{"manager metrics", "--manager-metrics-addr", EnvManagerMetricsAddr, DefaultManagerMetricsAddr, &opts.ManagerMetricsAddr},
	}
	operator, notes := opts.operatorEndpoints(&webhook)
	eps = append(eps, operator...)
	// Every listener stays open until all are chosen, so no two endpoints get the same free port.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	var errs []error
	for _, ep := range eps {
		if *ep.addr != "" {
			if _, _, err := net.SplitHostPort(*ep.addr); err != nil {
				errs = append(errs, fmt.Errorf("the %s address %q (%s or %s) is not host:port, e.g. %s: %w",
					ep.what, *ep.addr, ep.env, ep.flag, ep.def, err))
				continue
			}
			l, err := net.Listen("tcp", *ep.addr)
			if err != nil {
				errs = append(errs, ep.inUse(*ep.addr, err))
				continue
			}
			held = append(held, l)
			*ep.addr = l.Addr().String() // port 0 asks for any free port
			continue
		}
		l, err := net.Listen("tcp", ep.def)
		if err != nil {
			host, _, _ := net.SplitHostPort(ep.def)
			if l, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
				errs = append(errs, fmt.Errorf("finding a free port for the %s: %w", ep.what, err))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s: %s is in use, using %s (%s or %s fixes it)",
				ep.what, ep.def, display(l.Addr()), ep.env, ep.flag))
		}
		held = append(held, l)
		*ep.addr = l.Addr().String()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(webhook)
	opts.WebhookPort, _ = strconv.Atoi(port)
	return notes, nil
}

// operatorEndpoints are the operator's host addresses (webhook is its port as host:port). With the
// real node the operator runs in its pods and listens on none of them: there are none then, and
// an address given for one is dropped with a note saying so.
func (opts *Options) operatorEndpoints(webhook *string) (eps []endpoint, notes []string) {
	eps = []endpoint{
		{"operator health probes", "--probe-addr", EnvProbeAddr, DefaultProbeAddr, &opts.ProbeAddr},
		{"operator metrics", "--metrics-addr", EnvMetricsAddr, DefaultMetricsAddr, &opts.MetricsAddr},
		{"operator webhooks", "--webhook-port", EnvWebhookPort, net.JoinHostPort(allInterfaces, strconv.Itoa(DefaultWebhookPort)), webhook},
	}
	if !opts.RealNode {
		return eps, nil
	}
	for _, ep := range eps {
		if *ep.addr != "" {
			notes = append(notes, fmt.Sprintf("%s: %s (%s or %s) is not used: with the real node the operator runs in pods",
				ep.what, *ep.addr, ep.env, ep.flag))
			*ep.addr = ""
		}
	}
	return nil, notes
}

// inUse explains that a fixed address cannot be used and how to move it.
func (ep endpoint) inUse(addr string, err error) error {
	return fmt.Errorf("the %s cannot listen on %s (%w): stop what holds it, or move it with %s or %s (unset, a free port is chosen)",
		ep.what, addr, err, ep.env, ep.flag)
}

// display shows an address on every interface as the port alone.
func display(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err == nil && (host == "::" || host == "0.0.0.0") {
		return ":" + port
	}
	return a.String()
}
