package operator_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}

func noop(name string, calls *[]string) operator.Controller {
	return operator.Controller{Name: name, Setup: func(context.Context, ctrl.Manager, operator.Options) error {
		*calls = append(*calls, name)
		return nil
	}}
}

func TestOptions_SelectControllers(t *testing.T) {
	var calls []string
	all := []operator.Controller{noop("werfbundle", &calls), noop("webapp", &calls)}
	tests := []struct {
		flag    []string
		want    []string
		wantErr string
	}{
		{flag: nil, want: []string{"werfbundle", "webapp"}},
		{flag: []string{"webapp"}, want: []string{"webapp"}},
		{flag: []string{"webapp", "webapp"}, want: []string{"webapp"}},
		{flag: []string{"webapp", "nope"}, wantErr: `unknown controllers ["nope"]; available: webapp, werfbundle`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.flag, ","), func(t *testing.T) {
			opts := operator.Options{Controllers: tt.flag}
			got, err := opts.Select(all)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.want) {
				t.Errorf("selected %v, want %v", names, tt.want)
			}
		})
	}
}

// TestManager_ProbesLeaseAndGracefulStop runs the manager against the real apiserver: it sets up
// the selected controllers, answers /healthz and /readyz, takes the leader Lease, and on shutdown
// releases the Lease and returns.
func TestManager_ProbesLeaseAndGracefulStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slipway-system"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	probe := testenv.FreeAddr(t)
	var calls []string
	opts := operator.Options{
		Controllers:             []string{"webapp"},
		MetricsAddr:             "0",
		ProbeAddr:               probe,
		LeaderElect:             true,
		LeaderElectionID:        "slipway-test",
		Namespace:               ns.Name,
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             time.Second,
		GracefulShutdownTimeout: 10 * time.Second,
	}
	mgr, err := operator.NewManager(ctx, env.Config, scheme.New(), opts,
		[]operator.Controller{noop("werfbundle", &calls), noop("webapp", &calls)})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(calls) != "[webapp]" {
		t.Fatalf("set up %v, want [webapp]", calls)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	wait, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	for _, path := range []string{"/healthz", "/readyz"} {
		testenv.Eventually(wait, t, path+" answers 200", func() (bool, error) {
			resp, err := http.Get("http://" + probe + path)
			if err != nil {
				return false, err
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	}
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: ns.Name, Name: "slipway-test"}
	testenv.Eventually(wait, t, "the Lease has a holder", func() (bool, error) {
		err := env.Client.Get(wait, key, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", err
	})
	select {
	case <-mgr.Elected():
	case <-wait.Done():
		t.Fatal("not elected")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("manager stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("manager did not stop within 30s")
	}
	if err := env.Client.Get(context.Background(), key, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("lease still held by %q after shutdown", *lease.Spec.HolderIdentity)
	}
}
