package webhookcert

import (
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// dyingWriter lets the first n writes through and fails every later one, as a leader killed
// after its n-th write would.
type dyingWriter struct {
	client.Writer
	n int
}

var errDied = errors.New("the leader died")

func (w *dyingWriter) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	if w.n--; w.n < 0 {
		return errDied
	}
	return w.Writer.Create(ctx, o, opts...)
}

func (w *dyingWriter) Update(ctx context.Context, o client.Object, opts ...client.UpdateOption) error {
	if w.n--; w.n < 0 {
		return errDied
	}
	return w.Writer.Update(ctx, o, opts...)
}

// TestIssuer_CrashAfterEachWriteIsCompletedByTheNextReconcile: the first issue and a CA rotation
// write the Secret, then the mutating and the validating configuration. A leader dying after any
// of those writes leaves a state the next reconcile (a new leader) completes: every webhook trusts
// exactly the Secret's bundle, and the serving certificate verifies against it.
func TestIssuer_CrashAfterEachWriteIsCompletedByTheNextReconcile(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Duration // when the dying reconcile runs
		prep []time.Duration
	}{
		{"first issue", 0, nil},
		{"CA rotation", 81 * time.Minute, []time.Duration{0, 21 * time.Minute, 75 * time.Minute}},
	} {
		for writes := range 3 {
			t.Run(tc.name+", dying after write "+string(rune('0'+writes)), func(t *testing.T) {
				f := newIssuerFixture(t, configs()...)
				for _, at := range tc.prep {
					f.reconcile(at)
				}
				_, before := f.secret0()
				f.now = t0.Add(tc.at)
				dying := &issuer{reader: f.c, writer: &dyingWriter{Writer: f.c, n: writes}, opts: f.r.opts, hosts: f.r.hosts}
				if _, err := dying.Reconcile(context.Background(), reconcile.Request{}); !errors.Is(err, errDied) {
					t.Fatalf("the dying reconcile returned %v, want it to die at write %d", err, writes+1)
				}
				_, after := f.secret0()
				if writes > 0 && len(after.cas) == len(before.cas) && (before.ca == nil || after.ca.cert.Equal(before.ca.cert)) {
					t.Fatal("the Secret write did not happen first")
				}

				f.reconcile(tc.at)
				_, m := f.secret()
				f.wantBundles(m.cas...)
				if reason, _ := servingRenewal(m, f.r.hosts, f.now, f.r.opts.RotateBefore); reason != "" {
					t.Errorf("after the next reconcile the serving certificate is not good: %s", reason)
				}
			})
		}
	}
}

// secret0 is secret, or empty material when the Secret does not exist yet.
func (f *issuerFixture) secret0() (bool, material) {
	s, err := f.r.secret(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return s.ResourceVersion != "", parseMaterial(s.Data)
}
