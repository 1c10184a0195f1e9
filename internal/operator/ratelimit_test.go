package operator_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/operator"
)

// TestClientRateLimit_NoneUnderPriorityAndFairness: the default (--kube-api-qps 0) turns the
// client-side limit off against a kube-apiserver, which enforces API Priority and Fairness, even
// for an identity without any role (the server classifies a request before it authorizes it, so
// the answer carries the headers whatever the operator may do); an explicit QPS is kept, and a
// negative one turns the limit off unasked.
func TestClientRateLimit_NoneUnderPriorityAndFairness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path, err := env.UserKubeconfig(filepath.Join(t.TempDir(), "nobody.kubeconfig"), "nobody", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cfg       *rest.Config
		qps       float64
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{name: "default", cfg: env.Config, qps: 0, burst: operator.FallbackBurst, wantQPS: -1},
		{name: "default, no role", cfg: nobody, qps: 0, burst: operator.FallbackBurst, wantQPS: -1},
		{name: "explicit", cfg: env.Config, qps: 50, burst: 100, wantQPS: 50, wantBurst: 100},
		{name: "negative", cfg: env.Config, qps: -1, burst: 100, wantQPS: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, why, err := operator.ClientRateLimit(ctx, tt.cfg, tt.qps, tt.burst)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.QPS != tt.wantQPS || (tt.wantQPS > 0 && cfg.Burst != tt.wantBurst) || cfg.RateLimiter != nil {
				t.Errorf("QPS %g, burst %d, rate limiter %v (%s); want QPS %g, burst %d, none", cfg.QPS, cfg.Burst, cfg.RateLimiter, why, tt.wantQPS, tt.wantBurst)
			}
		})
	}
}

func TestPriorityAndFairnessHeaders(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		want   bool
	}{
		{name: "both", header: http.Header{"X-Kubernetes-Pf-Flowschema-Uid": {"a"}, "X-Kubernetes-Pf-Prioritylevel-Uid": {"b"}}, want: true},
		{name: "flow schema only", header: http.Header{"X-Kubernetes-Pf-Flowschema-Uid": {"a"}}},
		{name: "none", header: http.Header{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := operator.PriorityAndFairnessHeaders(tt.header); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
