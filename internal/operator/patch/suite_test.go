package patch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package's tests share one light control plane (etcd and kube-apiserver).
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}

// write is one request that changed something on the API server, as it went on the wire.
type write struct {
	Method string
	Path   string
	Body   map[string]any
}

// recorder keeps every request but reads (GET) a client sends: what a Helper writes, byte for byte.
type recorder struct {
	mu     sync.Mutex
	writes []write
	next   http.RoundTripper
	// after, when set, runs after each recorded write has been answered.
	after func(write)
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		w := write{Method: req.Method, Path: req.URL.Path}
		if req.Body != nil {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			if err := json.Unmarshal(body, &w.Body); err != nil {
				return nil, err
			}
		}
		r.mu.Lock()
		r.writes = append(r.writes, w)
		after := r.after
		r.mu.Unlock()
		resp, err := r.next.RoundTrip(req)
		if after != nil {
			after(w)
		}
		return resp, err
	}
	return r.next.RoundTrip(req)
}

// take returns the writes since the last call and forgets them.
func (r *recorder) take() []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

// fixture is one test's namespace, a client whose writes are recorded, and another client
// standing for every other writer of the same objects.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	c     client.Client
	rec   *recorder
	other client.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	rec := &recorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, ns: "patch-" + rand.String(6), c: c, rec: rec, other: env.Client}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// webApp creates a WebApp with a status, as a controller would find it, and returns it read back
// through the recorded client (nothing recorded).
func (f *fixture) webApp(name string) *webappv1.WebApp {
	f.t.Helper()
	app := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"team": "a"}},
		Spec:       webappv1.WebAppSpec{Image: "registry.example/app:1", Port: 8080},
	}
	if err := f.other.Create(f.ctx, app); err != nil {
		f.t.Fatal(err)
	}
	app.Status = webappv1.WebAppStatus{ObservedGeneration: 1, Phase: webappv1.PhaseReconciling, Replicas: 1, URL: "http://" + name}
	if err := f.other.Status().Update(f.ctx, app); err != nil {
		f.t.Fatal(err)
	}
	return f.get(name)
}

// get reads the WebApp from the API server.
func (f *fixture) get(name string) *webappv1.WebApp {
	f.t.Helper()
	app := &webappv1.WebApp{}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, app); err != nil {
		f.t.Fatal(err)
	}
	f.rec.take()
	return app
}

// wantWrites fails the test unless the recorded writes are exactly want (method, path suffix after
// the object's name, body).
func (f *fixture) wantWrites(name string, want ...write) {
	f.t.Helper()
	got := f.rec.take()
	if len(got) != len(want) {
		f.t.Fatalf("got %d writes, want %d:\n%s", len(got), len(want), show(got))
	}
	prefix := "/apis/" + webappv1.GroupVersion.String() + "/namespaces/" + f.ns + "/webapps/" + name
	for i := range want {
		w := want[i]
		w.Path = prefix + w.Path
		if got[i].Method != w.Method || got[i].Path != w.Path || !jsonEqual(got[i].Body, w.Body) {
			f.t.Fatalf("write %d:\n got %s\nwant %s", i, show(got[i:i+1]), show([]write{w}))
		}
	}
}

func jsonEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func show(ws []write) string {
	var b strings.Builder
	for _, w := range ws {
		body, _ := json.Marshal(w.Body)
		b.WriteString(w.Method + " " + w.Path + " " + string(body) + "\n")
	}
	return b.String()
}
