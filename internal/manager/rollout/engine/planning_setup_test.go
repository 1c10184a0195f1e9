package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// tcpProxy forwards loopback connections to a fleet server until closed: a cluster registered
// through it becomes unreachable (connection refused) once the proxy closes.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// proxied returns srv's kubeconfig pointed at a new proxy to it, and the proxy.
func proxied(t *testing.T, srv server) ([]byte, *tcpProxy) {
	t.Helper()
	cfg, err := clientcmd.Load(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	var upstream string
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		upstream = u.Host
		u.Host = ln.Addr().String()
		c.Server = u.String()
	}
	go p.serve(upstream)
	t.Cleanup(p.Close)
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out, p
}

func (p *tcpProxy) serve(upstream string) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
		go func() { _, _ = io.Copy(c, u); _ = c.Close() }()
	}
}

// Close stops listening and cuts every forwarded connection.
func (p *tcpProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// crdChart is the test operator's chart at version with its own CRD <plural>.charttest.slipway.dev
// (kind kind, schema of level) in crds/ instead of the shared Widget CRD, so that a breaking
// schema does not reach the other tests' charts on the shared fleet.
func crdChart(version, plural, kind string, level charttest.Level) charttest.ChartFiles {
	files := charttest.OperatorChart(chartName, version, level)
	delete(files, "crds/widgets.yaml")
	files["crds/"+plural+".yaml"] = charttest.YAML(charttest.NewCRD(plural, kind, level))
	return files
}

// submitErr submits a deployment request as alice and returns Submit's error.
func (h *harness) submitErr(body string) error {
	h.t.Helper()
	req, err := api.DecodeDeploymentRequest([]byte(body))
	if err != nil {
		return err
	}
	_, err = h.eng.Submit(context.Background(), req, "alice", "req-1")
	return err
}

// waitFailed waits for the deployment to fail and returns it; another end fails the test.
func (h *harness) waitFailed(id string) *store.Deployment {
	h.t.Helper()
	return h.waitStatus(id, store.DeploymentFailed)
}

// noInstalls fails the test when the deployment started an install.
func (h *harness) noInstalls(id string) {
	h.t.Helper()
	for _, e := range h.events(id) {
		if e.Type == "cluster.installing" || e.Type == "cluster.installed" {
			h.t.Errorf("deployment %s installed something (%s on %s: %s)", id, e.Type, e.Cluster, e.Message)
		}
	}
}

var errNoEvent = errors.New("no such event")

// eventIndex is the position of the deployment's first event of type typ on cluster.
func eventIndex(evs []*store.DeploymentEvent, typ, cluster string) (int, error) {
	for i, e := range evs {
		if e.Type == typ && e.Cluster == cluster {
			return i, nil
		}
	}
	return -1, errNoEvent
}
