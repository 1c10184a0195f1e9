//go:build e2e

package werfbundle_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// TestWerfBundle_CustomCAReachesPollAndJob: with certSecretRef the poll verifies a registry
// served with a private CA, and the Job gets the CA from its Secret as a volume, with
// SSL_CERT_DIR naming it; without it the same registry is refused as untrusted.
func TestWerfBundle_CustomCAReachesPollAndJob(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	upstream, err := url.Parse(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(upstream))
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-ca", Namespace: f.ns},
		Data: map[string][]byte{"ca.crt": caPEM}})
	repo := strings.TrimPrefix(srv.URL, "https://") + "/demo/app"
	tls := func(b *werfv1.WerfBundle) { b.Spec.Registry.Insecure = false }
	b := f.bundle("app", repo, tls, func(b *werfv1.WerfBundle) {
		b.Spec.Registry.CertSecretRef = &corev1.LocalObjectReference{Name: "registry-ca"}
	})
	untrusted := f.bundle("untrusted", repo, tls)
	f.create(b)
	f.create(untrusted)
	f.start()

	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	jobs := f.jobs(b)
	if len(jobs) != 1 {
		t.Fatalf("%d Jobs, want 1", len(jobs))
	}
	j := jobs[0]
	spec := j.Spec.Template.Spec
	var caVolume *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == "ca" {
			caVolume = &spec.Volumes[i]
		}
	}
	if caVolume == nil || caVolume.Secret == nil || caVolume.Secret.SecretName != j.Name ||
		len(caVolume.Secret.Items) != 1 || caVolume.Secret.Items[0].Key != "ca.crt" {
		t.Errorf("CA volume = %+v, want ca.crt of the Job's Secret %s", caVolume, j.Name)
	}
	c := spec.Containers[0]
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.Name == "ca" && m.MountPath == "/werf/ca" && m.ReadOnly)
	}
	if !mounted {
		t.Errorf("the CA is not mounted read-only at /werf/ca: %+v", c.VolumeMounts)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["SSL_CERT_DIR"] != "/etc/ssl/certs:/werf/ca" {
		t.Errorf("SSL_CERT_DIR = %q, want the system roots and /werf/ca", env["SSL_CERT_DIR"])
	}
	if a := argsOf(&j); strings.Contains(a, "--insecure-registry") {
		t.Errorf("a TLS registry got --insecure-registry: %s", a)
	}
	var secret corev1.Secret
	if err := f.c.Get(f.ctx, clientKeyIn(j.Namespace, j.Name), &secret); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secret.Data["ca.crt"], caPEM) {
		t.Errorf("the Job's Secret holds ca.crt %q, want the CA of certSecretRef", secret.Data["ca.crt"])
	}

	got := f.waitFor(untrusted, "the untrusted registry is refused", func(b *werfv1.WerfBundle) bool {
		return strings.Contains(b.Status.LastErrorMessage, "certificate")
	})
	if r := conditions.Get(got.Status.Conditions, conditions.Ready); r == nil || r.Status == metav1.ConditionTrue {
		t.Errorf("Ready without the CA = %+v", r)
	}
	if n := len(f.jobs(untrusted)); n != 0 {
		t.Errorf("%d Jobs without the CA", n)
	}
}

// TestWerfBundle_LogPrunerDeletesExpiredLogs: the pruner deletes stored logs older than their
// retention (the annotation, 7 days when absent or unreadable), as the operator's user, and
// leaves younger logs and other ConfigMaps alone; a stored log carries the bundle's retention,
// 7 by default.
func TestWerfBundle_LogPrunerDeletesExpiredLogs(t *testing.T) {
	f := newFixture(t)
	finished := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	id := f.ns
	mk := func(name string, labels bool, retention string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: id + "-" + name, Namespace: f.opNS,
			Annotations: map[string]string{werfbundle.AnnotationFinished: finished.Format(time.RFC3339)}}}
		if labels {
			cm.Labels = map[string]string{werfbundle.LabelManagedBy: werfbundle.ManagedByValue, werfbundle.LabelComponent: werfbundle.ComponentValue}
		}
		if retention != "" {
			cm.Annotations[werfbundle.AnnotationRetention] = retention
		}
		f.create(cm)
		return cm
	}
	week := mk("week", true, "7")
	month := mk("month", true, "30")
	dflt := mk("default", true, "")
	bad := mk("unreadable", true, "soon")
	foreign := mk("foreign", false, "1")
	exists := func(cm *corev1.ConfigMap) bool {
		err := f.c.Get(f.ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		return err == nil
	}
	c := operatorClient(t)
	prune := func(now time.Time) {
		t.Helper()
		p := &werfbundle.LogPruner{Reader: c, Writer: c, Namespace: f.opNS, Every: time.Hour, Now: func() time.Time { return now }}
		if _, err := p.Prune(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	prune(finished.Add(7*24*time.Hour - time.Minute))
	for _, cm := range []*corev1.ConfigMap{week, month, dflt, bad, foreign} {
		if !exists(cm) {
			t.Errorf("%s deleted before it expired", cm.Name)
		}
	}
	prune(finished.Add(8 * 24 * time.Hour))
	for cm, want := range map[*corev1.ConfigMap]bool{week: false, dflt: false, bad: false, month: true, foreign: true} {
		if exists(cm) != want {
			t.Errorf("%s exists = %t after 8 days, want %t", cm.Name, !want, want)
		}
	}
	prune(finished.Add(31 * 24 * time.Hour))
	if exists(month) {
		t.Errorf("%s kept after its 30 days", month.Name)
	}
	if !exists(foreign) {
		t.Errorf("%s, not a WerfBundle log, was deleted", foreign.Name)
	}

	reg := startRegistry(t, "1.0.0")
	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	f.start()
	got := f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")
	var log corev1.ConfigMap
	if err := f.c.Get(f.ctx, clientKeyIn(f.opNS, got.Status.LastJobLog), &log); err != nil {
		t.Fatal(err)
	}
	if r := log.Annotations[werfbundle.AnnotationRetention]; r != "7" {
		t.Errorf("stored log retention = %q, want the default 7", r)
	}
}

// syncBuffer collects log output written from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("a log line is not JSON: %s", sc.Text())
			continue
		}
		out = append(out, line)
	}
	return out
}

// TestWerfBundle_LogLinesCarryBundleNamespaceAndOperation: with the production (JSON) logger every
// note of a deploy is a JSON line naming the bundle, its namespace and the operation.
func TestWerfBundle_LogLinesCarryBundleNamespaceAndOperation(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	var out syncBuffer
	f.reconciler().Log = zap.New(zap.WriteTo(&out), zap.UseDevMode(false))
	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	f.start()
	f.waitPhase(b, werfv1.PhaseSynced, "1.0.0")

	want := map[string]string{werfbundle.ReasonNewTag: "Found tag 1.0.0", werfbundle.ReasonJobCreated: "Created apply Job",
		werfbundle.ReasonSucceeded: "Deployed tag 1.0.0", "PhaseSynced": "Phase Syncing -> Synced"}
	f.eventually("every note of the deploy is logged", func() bool {
		for _, line := range out.lines(t) {
			op, _ := line["operation"].(string)
			msg, _ := line["msg"].(string)
			if prefix, ok := want[op]; ok && strings.HasPrefix(msg, prefix) {
				if line["bundle"] != "app" || line["namespace"] != f.ns {
					t.Errorf("%s line names bundle %v in %v, want app in %s: %v", op, line["bundle"], line["namespace"], f.ns, line)
				}
				delete(want, op)
			}
		}
		return len(want) == 0
	})
}
