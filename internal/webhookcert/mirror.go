package webhookcert

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// mirrorResync is how often the mirror compares the directory with the Secret without an event, so
// files changed on disk (by hand, or left by a previous run) are rewritten.
const mirrorResync = time.Minute

// mirror copies the serving pair and the CA bundle from the Secret into the certificate
// directory, on every replica, for an operator outside the cluster where no volume holds them.
// Whatever the directory held before (a previous control plane's certificate) is replaced.
type mirror struct {
	reader client.Reader
	dir    string
}

func (m *mirror) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	s := &corev1.Secret{}
	if err := m.reader.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pair, err := parseKeyPair(s.Data[KeyCert], s.Data[KeyKey])
	if err != nil {
		// The issuer has not written a pair yet; its update brings us back.
		ctrl.LoggerFrom(ctx).V(1).Info("Secret holds no serving certificate yet", "reason", err.Error())
		return ctrl.Result{}, nil
	}
	files := map[string][]byte{KeyCert: s.Data[KeyCert], KeyKey: s.Data[KeyKey], KeyCA: s.Data[KeyCA]}
	if filesEqual(m.dir, files) {
		return ctrl.Result{RequeueAfter: mirrorResync}, nil
	}
	if err := writeFiles(m.dir, files); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Wrote the webhook serving certificate", "dir", m.dir, "notAfter", pair.cert.NotAfter,
		"serial", pair.cert.SerialNumber.Text(16))
	return ctrl.Result{RequeueAfter: mirrorResync}, nil
}
