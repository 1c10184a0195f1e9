//go:build e2e

package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
)

// switchLink is a TCP proxy in front of a kube-apiserver that can be cut (every connection
// closed, new ones refused) and restored: a cluster that becomes unreachable and comes back.
type switchLink struct {
	Addr   string
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newSwitchLink(t *testing.T, target string) *switchLink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &switchLink{Addr: l.Addr().String(), target: target}
	t.Cleanup(func() { _ = l.Close(); s.set(true) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.pipe(c)
		}
	}()
	return s
}

func (s *switchLink) pipe(c net.Conn) {
	up, err := net.Dial("tcp", s.target)
	s.mu.Lock()
	if s.down || err != nil {
		s.mu.Unlock()
		_ = c.Close()
		if up != nil {
			_ = up.Close()
		}
		return
	}
	s.conns = append(s.conns, c, up)
	s.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// set cuts the link (down) or restores it.
func (s *switchLink) set(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
	if down {
		for _, c := range s.conns {
			_ = c.Close()
		}
		s.conns = nil
	}
}

// flakyReceiver is a webhook receiver that answers 503 until recovered, can hold the next
// request until released (the test kills the manager meanwhile), and records every request.
type flakyReceiver struct {
	secret []byte
	mu     sync.Mutex
	// ok: answer 200; hold: the next request waits for release (or its client to go away).
	ok, hold bool
	held     chan string // the delivery id of the request being held
	release  chan struct{}
	got      map[string][]int // status answered, by delivery id
	kinds    map[string]string
	bad      []string // requests whose signature did not verify
}

func newFlakyReceiver(t *testing.T, secret string) (*flakyReceiver, string) {
	t.Helper()
	rc := &flakyReceiver{secret: []byte(secret), held: make(chan string, 1), release: make(chan struct{}),
		got: map[string][]int{}, kinds: map[string]string{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	t.Cleanup(rc.free)
	return rc, srv.URL
}

func (rc *flakyReceiver) free() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	select {
	case <-rc.release:
	default:
		close(rc.release)
	}
}

func (rc *flakyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(notifications.HeaderDelivery)
	rc.mu.Lock()
	if err := notifications.Verify(rc.secret, r.Header, body, time.Now(), 0); err != nil {
		rc.bad = append(rc.bad, fmt.Sprintf("%s: %v", id, err))
	}
	var p notifications.Payload
	if json.Unmarshal(body, &p) != nil || p.DeliveryID != id {
		rc.bad = append(rc.bad, "a body that is not the delivery's payload: "+string(body))
	}
	rc.kinds[id] = p.Kind
	hold := rc.hold
	rc.hold = false
	rc.mu.Unlock()
	if hold {
		rc.held <- id
		select {
		case <-rc.release:
		case <-r.Context().Done(): // the manager died
		}
	}
	rc.mu.Lock()
	status := http.StatusServiceUnavailable
	if rc.ok {
		status = http.StatusOK
	}
	rc.got[id] = append(rc.got[id], status)
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// listNotifications is every delivery, through GET /api/v1/notifications.
func listNotifications(t *testing.T, p *proc) []api.Notification {
	t.Helper()
	var l api.NotificationList
	if err := json.Unmarshal(p.must("GET", "/api/v1/notifications?limit=1000", p.d.admin(), nil, http.StatusOK).body, &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// awaitNotifications polls the deliveries until cond holds (two minutes at most).
func awaitNotifications(t *testing.T, p *proc, what string, cond func([]api.Notification) bool) []api.Notification {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ns := listNotifications(t, p)
		if cond(ns) {
			return ns
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within two minutes; deliveries: %+v", what, ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestNotifications_FailingReceiverAcrossAReplicaKill is the acceptance: a webhook
// receiver that fails (503) gets every notification once it recovers, across a replica killed
// with SIGKILL in the middle of a delivery. The notifications are real: a cluster whose API
// server becomes unreachable (cluster.unreachable), a deployment to it that fails in planning
// (deployment.failed), test notifications, and, after the kill, the cluster back
// (cluster.recovered). While the receiver fails, every delivery is retried; then the receiver
// holds one attempt, the replica making it is SIGKILLed, another replica starts on the same
// database, the receiver recovers: every delivery listed by the API arrives with a 200, the one
// the killed replica was sending included, each signed with the channel's secret. No secret is in
// the API's answers or the replicas' logs.
func TestNotifications_FailingReceiverAcrossAReplicaKill(t *testing.T) {
	t.Parallel()
	apiserver := fleet(t, 1).Servers[0]
	repo := operatorRepo(t).URL
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testNotificationsAcrossAKill(t, engine, apiserver.Config.Host, apiserver.Kubeconfig, repo)
		})
	}
}

func testNotificationsAcrossAKill(t *testing.T, engine, apiHost string, kubeconfig []byte, repo string) {
	const secret, token = "whsec-binary-test-0123456789abcdef", "tok-Hq27Lx"
	rc, rcURL := newFlakyReceiver(t, secret)
	u, err := url.Parse(apiHost)
	if err != nil {
		t.Fatal(err)
	}
	link := newSwitchLink(t, u.Host)
	d := newDeployment(t, engine)
	flags := []string{"--insecure-http", "--cluster-health-interval=1s", "--notification-timeout=2s"}
	p1 := d.serve(append(flags, "--replica-id=r1")...)
	admin := d.admin()
	channel, _ := json.Marshal(map[string]any{"name": "ops", "kind": "webhook",
		"webhook": map[string]string{"url": rcURL + "/hook?token=" + token, "secret": secret}, "routes": []map[string]any{{}}})
	p1.must("POST", "/api/v1/notifications/channels", admin, channel, http.StatusCreated)

	cluster, op := uniqueName("ntf-prod"), uniqueName("ntf-op")
	registerCluster(t, p1, cluster, "Production", withServer(t, kubeconfig, "https://"+link.Addr))
	registerOperator(t, p1, op, op, repo)
	link.set(true)
	awaitNotifications(t, p1, "cluster.unreachable", func(ns []api.Notification) bool {
		return slices.ContainsFunc(ns, func(n api.Notification) bool { return n.Kind == "cluster.unreachable" })
	})
	dep := postDeployment(t, p1, admin, fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": [%q], "strategy": "Direct"}`, op, cluster))
	waitDeployment(t, p1, dep.ID, "Failed", time.Minute)
	for range 3 {
		p1.must("POST", "/api/v1/notifications/channels/ops/test", admin, nil, http.StatusAccepted)
	}
	before := awaitNotifications(t, p1, "every delivery retried", func(ns []api.Notification) bool {
		return len(ns) == 5 && !slices.ContainsFunc(ns, func(n api.Notification) bool { return n.Attempts < 2 || n.State != "pending" })
	})

	// Kill r1 while it sends one of them.
	rc.mu.Lock()
	rc.hold = true
	rc.mu.Unlock()
	var inFlight string
	select {
	case inFlight = <-rc.held:
	case <-time.After(time.Minute):
		t.Fatal("no delivery attempt reached the receiver within a minute")
	}
	p1.Kill()
	t.Logf("killed r1 while it sent delivery %s", inFlight)

	p2 := d.serve(append(flags, "--replica-id=r2")...)
	rc.mu.Lock()
	rc.ok = true
	rc.mu.Unlock()
	rc.free()
	link.set(false)
	after := awaitNotifications(t, p2, "every delivery delivered, the cluster back", func(ns []api.Notification) bool {
		return len(ns) == 6 && !slices.ContainsFunc(ns, func(n api.Notification) bool { return n.State != "delivered" })
	})
	checkDeliveredOnce(t, rc, before, after, inFlight)
	for where, data := range map[string][]byte{"r1's log": p1.stderr.Bytes(), "r2's log": p2.stderr.Bytes(),
		"API answers": append(p1.bodies.Bytes(), p2.bodies.Bytes()...)} {
		for _, s := range []string{secret, token} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%q appears in %s", s, where)
			}
		}
	}
}

// checkDeliveredOnce: every delivery the API lists reached the receiver and was answered 200
// (retries of one id are allowed, a lost id is not), the kinds are the events', and the one in
// flight at the kill was sent again.
func checkDeliveredOnce(t *testing.T, rc *flakyReceiver, before, after []api.Notification, inFlight string) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Errorf("requests that do not verify: %v", rc.bad)
	}
	var kinds []string
	for _, n := range after {
		kinds = append(kinds, n.Kind)
		if !slices.Contains(rc.got[n.ID], http.StatusOK) {
			t.Errorf("delivery %s (%s) never answered 200: %v", n.ID, n.Kind, rc.got[n.ID])
		}
		if rc.kinds[n.ID] != n.Kind {
			t.Errorf("delivery %s: received as %q, listed as %q", n.ID, rc.kinds[n.ID], n.Kind)
		}
	}
	slices.Sort(kinds)
	want := []string{"cluster.recovered", "cluster.unreachable", "deployment.failed", "test", "test", "test"}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if len(rc.got) != len(after) {
		t.Errorf("the receiver saw %d delivery ids, the API lists %d", len(rc.got), len(after))
	}
	i := slices.IndexFunc(after, func(n api.Notification) bool { return n.ID == inFlight })
	j := slices.IndexFunc(before, func(n api.Notification) bool { return n.ID == inFlight })
	if i < 0 || j < 0 || after[i].Attempts <= before[j].Attempts || len(rc.got[inFlight]) < 2 {
		t.Errorf("the delivery in flight at the kill: %+v before, %+v after, answers %v", before, after, rc.got[inFlight])
	}
}
