package deploy_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// lookupChart renders ConfigMap "rendered" with the number of fields of what template looks up.
func lookupChart(lookup string) gittest.Files {
	return gittest.Files{
		"charts/app/Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"),
		"charts/app/templates/configmap.yaml": []byte(`{{- $found := ` + lookup + ` }}
apiVersion: v1
kind: ConfigMap
metadata: {name: rendered}
data: {found: {{ len $found | quote }}}
`),
	}
}

// TestRender_TheRendererHoldsNoCredential: a chart looks a ConfigMap of its namespace up and
// gets it, while the renderer's environment and request hold nothing of the operator's
// connection: no token, no certificate or key, no CA, not even the API server's address.
func TestRender_TheRendererHoldsNoCredential(t *testing.T) {
	f := newFixture(t)
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: f.ns}, Data: map[string]string{"a": "1", "b": "2"}}
	if err := f.c.Create(f.ctx, mine); err != nil {
		t.Fatal(err)
	}
	waitBound(f.ctx, t, f.ns)
	var mu sync.Mutex
	var envs [][]string
	var requests [][]byte
	defer deploy.ObserveRenderers(func(env []string, request []byte) {
		mu.Lock()
		defer mu.Unlock()
		envs, requests = append(envs, env), append(requests, request)
	})()
	f.deploy(f.request(helmType, f.commit(lookupChart(`lookup "v1" "ConfigMap" .Release.Namespace "mine"`)), "charts/app"))
	var cm corev1.ConfigMap
	f.get("rendered", &cm)
	if cm.Data["found"] == "0" {
		t.Errorf("the lookup of ConfigMap mine in the environment's namespace found nothing")
	}
	if len(requests) != 1 {
		t.Fatalf("%d renderers started, want 1", len(requests))
	}
	if want := []string{"SLIPWAY_CATALYST_RENDERER=1", "GOMAXPROCS=1", "GOTRACEBACK=single"}; !slices.Equal(envs[0], want) {
		t.Errorf("renderer environment %q, want only %q", envs[0], want)
	}
	cfg := env.Config
	secrets := map[string][]byte{"bearer token": []byte(cfg.BearerToken), "client certificate": cfg.CertData,
		"client key": cfg.KeyData, "CA": cfg.CAData, "API server address": []byte(strings.TrimPrefix(cfg.Host, "https://")),
		"token file": []byte(cfg.BearerTokenFile), "certificate file": []byte(cfg.CertFile), "key file": []byte(cfg.KeyFile)}
	held := 0
	for name, s := range secrets {
		if len(s) == 0 {
			continue
		}
		held++
		for _, form := range [][]byte{s, []byte(base64.StdEncoding.EncodeToString(s))} {
			if bytes.Contains(requests[0], form) {
				t.Errorf("the render request holds the operator's %s", name)
			}
		}
	}
	if held < 2 {
		t.Fatalf("the test's client configuration holds %d credentials: nothing to look for", held)
	}
	for _, key := range []string{"bearerToken", "certData", "keyData", "caData", "impersonate", "kubeconfig"} {
		if bytes.Contains(bytes.ToLower(requests[0]), []byte(strings.ToLower(key))) {
			t.Errorf("the render request has a field %s", key)
		}
	}
}

// TestRender_LookupsOutsideTheNamespaceAreRefused: a chart's lookup of another environment's
// ConfigMap, of a cluster-scoped object or of every namespace's Secrets fails the deploy with
// RenderFailed, saying the chart may read its own namespace only, before anything is written.
func TestRender_LookupsOutsideTheNamespaceAreRefused(t *testing.T) {
	other := "other-" + rand.String(6)
	f := newFixture(t)
	if err := f.c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Create(f.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: other}}); err != nil {
		t.Fatal(err)
	}
	waitBound(f.ctx, t, f.ns)
	for _, tc := range []struct{ name, lookup, want string }{
		{"another namespace", `lookup "v1" "ConfigMap" "` + other + `" "theirs"`,
			"namespace " + other + " is not the environment's; a chart may look up objects of its own namespace"},
		{"a Namespace", `lookup "v1" "Namespace" "" "` + other + `"`, "cluster-scoped objects and objects of every namespace are not readable"},
		{"a ClusterRole", `lookup "rbac.authorization.k8s.io/v1" "ClusterRole" "" "cluster-admin"`, "cluster-scoped objects"},
		{"every namespace", `lookup "v1" "Secret" "" ""`, "objects of every namespace are not readable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.t = t
			_, err := f.engine.Deploy(f.ctx, f.request(helmType, f.commit(lookupChart(tc.lookup)), "charts/app"))
			f.checkRenderFailed(err, "lookup refused")
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("message %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestRender_ASlowLookupIsCut: an API server that does not answer a lookup fails the deploy at
// the lookup timeout, well before the render timeout.
func TestRender_ASlowLookupIsCut(t *testing.T) {
	f := newFixture(t)
	_, cfg := newLookupGate(t) // never lets a lookup of ConfigMap "gate" through
	engine, err := deploy.New(cfg, deploy.Options{Render: deploy.RenderLimits{LookupTimeout: time.Second, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	f.engine = engine
	waitBound(f.ctx, t, f.ns)
	start := time.Now()
	_, err = f.engine.Deploy(f.ctx, f.request(helmType, f.commit(gateChart), "charts/app"))
	f.checkRenderFailed(err, "took longer than 1s (the lookup timeout)")
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the deploy failed after %s, not at the lookup timeout", d)
	}
}

// TestRender_AHugeLookupIsCut: a lookup whose answer passes the lookup size limit (three
// ConfigMaps of 40 KiB, with a limit of 64 KiB) fails the deploy, naming the limit.
func TestRender_AHugeLookupIsCut(t *testing.T) {
	f := newFixture(t, func(o *deploy.Options) { o.Render.LookupMaxBytes = 64 << 10 })
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i), Namespace: f.ns},
			Data: map[string]string{"data": strings.Repeat("x", 40<<10)}}
		if err := f.c.Create(f.ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	waitBound(f.ctx, t, f.ns)
	_, err := f.engine.Deploy(f.ctx, f.request(helmType, f.commit(lookupChart(`lookup "v1" "ConfigMap" .Release.Namespace ""`)), "charts/app"))
	f.checkRenderFailed(err, "is larger than 65536 bytes (the lookup size limit)", "big-0", "big-1", "big-2")
}
