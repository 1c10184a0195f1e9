//go:build e2e

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/testenv"
)

const (
	webappReplicas     = 3
	webappsPerNS       = 50
	webappChangeWorker = 8
)

// TestChaos_WebApp: three operator replicas serve the admission webhooks (all of them) and elect
// a leader that reconciles; WebApps change image and replicas in rounds while the leader is
// SIGKILLed again and again and the API server restarts once. Every write is made once: an
// error is counted, never retried, so a failover that the webhooks do not ride out shows up.
// Afterwards every WebApp runs its last accepted spec, with exactly one Deployment and one
// Service, and no admission failure had another cause than a call in flight on the killed
// replica's connection.
func TestChaos_WebApp(t *testing.T) {
	st := startSuite(t)
	sc, rnd, ctx, full, c, clock, kubeconfig := st.sc, st.rnd, st.ctx, st.full, st.c, st.clock, st.kubeconfig

	// Three replicas, each with its own ports; the API server reaches their webhooks through one
	// address (see webhookFront).
	ops := make([]*operatorProc, webappReplicas)
	for i := range ops {
		ops[i] = startOperator(ctx, t, kubeconfig, operatorConfig{name: fmt.Sprintf("webapp-%d", i), controllers: "webapp",
			args: []string{"--webhook-cert-mirror=true", "--webhook-cert-dns-names=localhost,127.0.0.1"}})
	}
	front := startWebhookFront(t, ops)
	m, v, err := config.WebhookConfigurations("https://" + front.addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{m, v} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	leader := waitLeader(ctx, t, ops)
	t.Logf("%s leads", leader.Name)

	rec := &ownedRecord{owners: map[types.UID]map[string]map[types.UID]bool{}}
	w := startWatches(t, full.Config, nil)
	w.observe(t, &appsv1.Deployment{}, rec.owned("Deployment"))
	w.observe(t, &corev1.Service{}, rec.owned("Service"))

	// The WebApps, created through the webhooks: creation errors count too.
	nsCount := (sc.webapps + webappsPerNS - 1) / webappsPerNS
	for i := range nsCount {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wa-%02d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	apps := make([]*webappState, sc.webapps)
	errs := &writeErrors{}
	testenv.Eventually(ctx, t, "the webhook configurations carry the operator's CA", func() (bool, error) {
		var got = m.DeepCopy()
		err := c.Get(ctx, client.ObjectKeyFromObject(m), got)
		return err == nil && len(got.Webhooks) > 0 && len(got.Webhooks[0].ClientConfig.CABundle) > 0, err
	})
	testenv.Parallel(t, sc.webapps, webappChangeWorker, func(i int) error {
		a := &webappState{key: types.NamespacedName{Namespace: fmt.Sprintf("wa-%02d", i/webappsPerNS), Name: fmt.Sprintf("web-%03d", i)},
			image: "nginx:1.25", replicas: 1}
		apps[i] = a
		err := c.Create(ctx, &webappv1.WebApp{
			ObjectMeta: metav1.ObjectMeta{Name: a.key.Name, Namespace: a.key.Namespace},
			Spec:       webappv1.WebAppSpec{Image: a.image, Replicas: ptr.To(a.replicas), Port: 8080},
		})
		errs.count(err, false)
		if err != nil {
			// Counted; created again below so the run has all its objects.
			return c.Create(ctx, &webappv1.WebApp{
				ObjectMeta: metav1.ObjectMeta{Name: a.key.Name, Namespace: a.key.Namespace},
				Spec:       webappv1.WebAppSpec{Image: a.image, Replicas: ptr.To(a.replicas), Port: 8080},
			})
		}
		return nil
	})

	// Rounds of changes, going on while the leader is killed again and again.
	var rounds atomic.Int64
	changing, stopChanging := context.WithCancel(ctx)
	changed := make(chan struct{})
	var failing atomic.Bool // true from a kill until a leader is back
	go func() {
		defer close(changed)
		for round := 1; changing.Err() == nil || round <= sc.webappRounds; round++ {
			testenv.Parallel(t, len(apps), webappChangeWorker, func(i int) error {
				apps[i].change(ctx, c, round, i, errs, failing.Load)
				return nil
			})
			rounds.Add(1)
			if ctx.Err() != nil {
				return
			}
			// Rollouts take a while; a pause between rounds (longer for more WebApps) keeps
			// changes coming without burying two shared cores.
			sleep(changing, 5*time.Second+time.Duration(len(apps))*50*time.Millisecond)
		}
	}()

	firstKills := sc.webappKills / 2
	kills := 0
	killLeader := func(n int) {
		for range n {
			l := waitLeader(ctx, t, ops)
			sleep(ctx, between(rnd, 2*time.Second, 12*time.Second))
			failing.Store(true)
			clock.mark()
			if err := l.crash(ctx); err != nil {
				t.Fatalf("restarting %s: %v", l.Name, err)
			}
			kills++
			next := waitLeader(ctx, t, ops)
			failing.Store(false)
			t.Logf("killed leader %s; %s leads now", l.Name, next.Name)
		}
	}
	killLeader(firstKills)
	sleep(ctx, between(rnd, 2*time.Second, 6*time.Second))
	down := restartAPIServer(ctx, t, full, clock)
	killLeader(sc.webappKills - firstKills)
	stopChanging()
	<-changed
	t.Logf("%d rounds of changes; write errors: %s", rounds.Load(), errs)

	// Convergence to the last accepted spec.
	waitCtx, waitCancel := context.WithTimeout(ctx, sc.converge)
	defer waitCancel()
	for {
		pending := webappsPending(waitCtx, c, apps)
		if len(pending) == 0 {
			break
		}
		select {
		case <-waitCtx.Done():
			t.Fatalf("the WebApps did not converge within %s: %d pending, e.g. %s", sc.converge, len(pending), strings.Join(pending[:min(10, len(pending))], "; "))
		case <-time.After(2 * time.Second):
		}
	}
	converged := clock.since()
	for _, o := range ops {
		if n := o.unexpectedExits(); n > 0 {
			t.Errorf("%s exited %d time(s) on its own", o.Name, n)
		}
	}

	// What must hold.
	sleep(ctx, 2*time.Second)
	dups := rec.duplicates()
	for _, d := range dups {
		t.Errorf("duplicate: %s", d)
	}
	lost := ownedMissing(ctx, t, c, apps)
	for _, l := range lost {
		t.Errorf("lost: %s", l)
	}
	// A webhook call on a connection to the replica at the moment it is SIGKILLed fails (the API
	// server does not retry it): those are the figure. Any other admission failure (a replica
	// serving a certificate the configurations do not trust, no replica to take a connection)
	// is a bug.
	if n := errs.admissionOther.Load(); n > 0 {
		t.Errorf("%d admission failures not caused by a connection to the killed replica: %s", n, errs.first())
	}
	if n := front.dropped.Load(); n > 0 {
		t.Errorf("%d webhook connections found no replica to take them", n)
	}
	var peak int64
	for _, o := range ops {
		peak = max(peak, o.peakRSS())
	}
	f := figures{suite: "WebApp", scale: sc.name, objects: sc.webapps, kills: kills, apiserverDown: down,
		duplicates: len(dups), lost: len(lost), converged: converged, peakRSS: peak}
	f.add("writes", float64(errs.writes.Load()), "writes")
	f.add("admission failures", float64(errs.admission.Load()), "admission-failures")
	f.add("admission failures during failovers", float64(errs.admissionFailover.Load()), "admission-failures-failover")
	f.add("admission failures, not the killed replica", float64(errs.admissionOther.Load()), "admission-failures-other")
	f.add("writes refused while the API server restarted", float64(errs.unavailable.Load()), "apiserver-unavailable")
	f.add("rounds of changes", float64(rounds.Load()), "rounds")
	report(t, f)
}

// webappState is one WebApp and the spec its last accepted write gave it.
type webappState struct {
	key      types.NamespacedName
	mu       sync.Mutex
	image    string
	replicas int32
}

// change patches image and replicas once; the spec counts only when the write was accepted.
// failover tells, once the write has returned, whether a leader is being replaced.
func (a *webappState) change(ctx context.Context, c client.Client, round, i int, errs *writeErrors, failover func() bool) {
	image := fmt.Sprintf("nginx:1.%d", 25+round)
	replicas := int32(1 + (i+round)%3)
	patch := fmt.Sprintf(`{"spec":{"image":%q,"replicas":%d}}`, image, replicas)
	app := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: a.key.Name, Namespace: a.key.Namespace}}
	err := c.Patch(ctx, app, client.RawPatch(types.MergePatchType, []byte(patch)))
	errs.count(err, failover())
	if err == nil {
		a.mu.Lock()
		a.image, a.replicas = image, replicas
		a.mu.Unlock()
	}
}

// writeErrors counts the client's errors by cause.
type writeErrors struct {
	// admission counts every failed webhook call, admissionFailover those between a kill and
	// the next leader, admissionOther those whose connection did not break (see count).
	writes, admission, admissionFailover, admissionOther, unavailable, other atomic.Int64

	mu       sync.Mutex
	examples []string
}

func (e *writeErrors) count(err error, failover bool) {
	e.writes.Add(1)
	if err == nil {
		return
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "webhook"):
		e.admission.Add(1)
		if failover {
			e.admissionFailover.Add(1)
		}
		// The connection to the replica broke under the call: it was the killed one's.
		if !strings.Contains(msg, "broken pipe") && !strings.Contains(msg, "connection reset") && !strings.HasSuffix(msg, "EOF") {
			e.admissionOther.Add(1)
		}
	case isUnavailable(err):
		e.unavailable.Add(1)
	default:
		e.other.Add(1)
	}
	e.mu.Lock()
	if len(e.examples) < 5 {
		e.examples = append(e.examples, msg)
	}
	e.mu.Unlock()
}

func (e *writeErrors) first() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.examples, "; ")
}

func (e *writeErrors) String() string {
	return fmt.Sprintf("%d writes: %d admission failures (%d during failovers), %d while the API server was down, %d other (%s)",
		e.writes.Load(), e.admission.Load(), e.admissionFailover.Load(), e.unavailable.Load(), e.other.Load(), e.first())
}

// isUnavailable: the API server itself did not answer (its restart).
func isUnavailable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) || apierrors.IsServiceUnavailable(err) || strings.Contains(err.Error(), "connection refused") ||
		strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "connection reset")
}

// waitLeader returns the replica whose metrics say it leads.
func waitLeader(ctx context.Context, t *testing.T, ops []*operatorProc) *operatorProc {
	t.Helper()
	var leader *operatorProc
	testenv.Eventually(ctx, t, "one replica leads", func() (bool, error) {
		leader = nil
		for _, o := range ops {
			if o.leading(ctx) {
				if leader != nil {
					return false, fmt.Errorf("%s and %s both lead", leader.Name, o.Name)
				}
				leader = o
			}
		}
		return leader != nil, nil
	})
	return leader
}

// webappsPending lists the WebApps not yet running their last accepted spec.
func webappsPending(ctx context.Context, c client.Client, apps []*webappState) []string {
	var pending []string
	var list webappv1.WebAppList
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &list); err != nil {
		return []string{err.Error()}
	}
	if err := c.List(ctx, &deps); err != nil {
		return []string{err.Error()}
	}
	byKey := map[types.NamespacedName]*webappv1.WebApp{}
	for i := range list.Items {
		byKey[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	depByKey := map[types.NamespacedName]*appsv1.Deployment{}
	for i := range deps.Items {
		depByKey[client.ObjectKeyFromObject(&deps.Items[i])] = &deps.Items[i]
	}
	for _, a := range apps {
		a.mu.Lock()
		image, replicas := a.image, a.replicas
		a.mu.Unlock()
		app, dep := byKey[a.key], depByKey[a.key]
		switch {
		case app == nil:
			pending = append(pending, a.key.String()+" is missing")
		case app.Spec.Image != image || ptr.Deref(app.Spec.Replicas, 1) != replicas:
			pending = append(pending, fmt.Sprintf("%s has spec %s x%d, its last accepted write %s x%d", a.key, app.Spec.Image, ptr.Deref(app.Spec.Replicas, 1), image, replicas))
		case app.Status.Phase != webappv1.PhaseReady || app.Status.ObservedGeneration != app.Generation ||
			app.Status.AvailableReplicas != replicas || app.Status.UpdatedReplicas != replicas:
			pending = append(pending, fmt.Sprintf("%s is %s (%d/%d available)", a.key, app.Status.Phase, app.Status.AvailableReplicas, replicas))
		case dep == nil:
			pending = append(pending, a.key.String()+" has no Deployment")
		case len(dep.Spec.Template.Spec.Containers) == 0 || dep.Spec.Template.Spec.Containers[0].Image != image ||
			ptr.Deref(dep.Spec.Replicas, 0) != replicas:
			pending = append(pending, a.key.String()+"'s Deployment is not at the spec")
		}
	}
	sort.Strings(pending)
	return pending
}

// ownedMissing lists the WebApps without their Deployment or Service.
func ownedMissing(ctx context.Context, t *testing.T, c client.Client, apps []*webappState) []string {
	t.Helper()
	var out []string
	for _, a := range apps {
		for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			if err := c.Get(ctx, a.key, o); err != nil {
				out = append(out, fmt.Sprintf("%T of %s: %v", o, a.key, err))
			}
		}
	}
	return out
}

// ownedRecord is every Deployment and Service a watch saw, by owning WebApp.
type ownedRecord struct {
	mu sync.Mutex
	// owners: WebApp UID -> kind -> object UIDs alive now.
	owners map[types.UID]map[string]map[types.UID]bool
	dups   []string
}

func (r *ownedRecord) owned(kind string) func(client.Object, bool) {
	return func(o client.Object, deleted bool) {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "WebApp" {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		byKind := r.owners[ref.UID]
		if byKind == nil {
			byKind = map[string]map[types.UID]bool{}
			r.owners[ref.UID] = byKind
		}
		alive := byKind[kind]
		if alive == nil {
			alive = map[types.UID]bool{}
			byKind[kind] = alive
		}
		if deleted {
			delete(alive, o.GetUID())
			return
		}
		alive[o.GetUID()] = true
		if len(alive) > 1 {
			r.dups = append(r.dups, fmt.Sprintf("%d %ss of WebApp %s/%s at once", len(alive), kind, o.GetNamespace(), ref.Name))
		}
	}
}

func (r *ownedRecord) duplicates() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dups...)
}

// webhookFront is the one address the API server calls the webhooks at, in front of every
// replica, as a Service is in a cluster: each connection goes to the next replica in turn, and
// to the one after when a replica refuses the connection (its process is dead). A request already
// sent to a replica that dies is not moved: it fails, and the client's error counts it.
type webhookFront struct {
	addr string
	ln   net.Listener
	next atomic.Uint64
	ops  []*operatorProc
	// dropped counts connections no replica accepted.
	dropped atomic.Int64
}

func startWebhookFront(t *testing.T, ops []*operatorProc) *webhookFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &webhookFront{addr: ln.Addr().String(), ln: ln, ops: ops}
	go f.serve()
	t.Cleanup(func() { _ = ln.Close() })
	return f
}

func (f *webhookFront) serve() {
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.relay(in)
	}
}

func (f *webhookFront) relay(in net.Conn) {
	defer func() { _ = in.Close() }()
	start := f.next.Add(1)
	var out net.Conn
	for i := range uint64(len(f.ops)) {
		o := f.ops[(start+i)%uint64(len(f.ops))]
		c, err := net.DialTimeout("tcp", o.WebhookAddr, time.Second)
		if err == nil {
			out = c
			break
		}
	}
	if out == nil {
		f.dropped.Add(1)
		return
	}
	defer func() { _ = out.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
}
