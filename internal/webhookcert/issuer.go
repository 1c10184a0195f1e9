package webhookcert

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Bounds of the issuer's requeue: soon enough to notice a changed clock, never a busy loop.
const (
	minRequeue = time.Second
	maxRequeue = time.Hour
	// waitRequeue is how often the issuer looks again while it waits for the configurations to
	// trust a new CA (it also reacts to their changes at once).
	waitRequeue = 10 * time.Second
)

// issuer keeps the Secret valid and the configurations' caBundle in step with it. It runs on the
// leader only and reads from the API server, so it never acts on a stale copy of what it wrote.
type issuer struct {
	reader client.Reader
	writer client.Writer
	opts   Options
	hosts  hosts
}

func (r *issuer) Reconcile(ctx context.Context, _ reconcile.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	now := r.opts.Now()
	secret, err := r.secret(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	configs, err := r.configs(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	m := parseMaterial(secret.Data)
	changed := false
	if reason := caRenewal(m, now, r.opts.RotateBefore); reason != "" {
		ca, err := newCA(now, r.opts.CAValidity)
		if err != nil {
			return ctrl.Result{}, err
		}
		m.rotateCA(ca)
		changed = true
		log.Info("Created a webhook CA", "reason", reason, "notAfter", ca.cert.NotAfter)
	}
	if m.prune(now) {
		changed = true
		log.Info("Dropped expired CAs from the webhook CA bundle", "remaining", len(m.cas))
	}
	waiting := false
	if reason, usable := servingRenewal(m, r.hosts, now, r.opts.RotateBefore); reason != "" {
		// A serving certificate from a CA the API server does not trust yet would fail every call;
		// the current one serves on until the bundle has reached every configuration.
		if usable && !trustedByAll(configs, m.ca.cert) {
			waiting = true
			log.Info("Deferred the serving certificate until the webhook configurations trust the new CA", "reason", reason)
		} else {
			s, err := newServing(m.ca, r.hosts, now, r.opts.CertValidity)
			if err != nil {
				return ctrl.Result{}, err
			}
			m.serving = s
			changed = true
			log.Info("Issued a webhook serving certificate", "reason", reason, "notAfter", s.cert.NotAfter, "dnsNames", s.cert.DNSNames)
		}
	}
	if changed {
		if err := r.writeSecret(ctx, secret, m); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.inject(ctx, configs, encodeCerts(m.cas)); err != nil {
		return ctrl.Result{}, err
	}
	after := clamp(m.nextCheck(r.opts.RotateBefore).Sub(now))
	if waiting {
		after = min(after, waitRequeue)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// secret returns the Secret, or a new one (not yet created) when it does not exist.
func (r *issuer) secret(ctx context.Context) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.opts.Namespace, Name: r.opts.SecretName}, s)
	if apierrors.IsNotFound(err) {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: r.opts.SecretName, Labels: map[string]string{
				"app.kubernetes.io/managed-by": "slipway", "app.kubernetes.io/component": "webhook-cert",
			}},
			Type: corev1.SecretTypeTLS,
		}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", r.opts.Namespace, r.opts.SecretName, err)
	}
	return s, nil
}

func (r *issuer) writeSecret(ctx context.Context, s *corev1.Secret, m material) error {
	s.Data = m.data(s.Data)
	if s.ResourceVersion == "" {
		if err := r.writer.Create(ctx, s, client.FieldOwner(fieldName)); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Created the webhook certificate Secret", "secret", klog.KObj(s))
		return nil
	}
	if err := r.writer.Update(ctx, s, client.FieldOwner(fieldName)); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// configs returns the named webhook configurations that exist, from the API server.
func (r *issuer) configs(ctx context.Context) ([]webhookConfig, error) {
	return readConfigs(ctx, r.reader, r.opts)
}

func (r *issuer) inject(ctx context.Context, configs []webhookConfig, bundle []byte) error {
	for _, c := range configs {
		if !c.inject(bundle) {
			continue
		}
		if err := r.writer.Update(ctx, c.obj, client.FieldOwner(fieldName)); err != nil {
			return fmt.Errorf("injecting the CA bundle into %s: %w", c.obj.GetName(), err)
		}
		ctrl.LoggerFrom(ctx).Info("Injected the CA bundle", "configuration", c.obj.GetName(), "webhooks", len(c.bundles))
	}
	return nil
}

func clamp(d time.Duration) time.Duration {
	return min(max(d, minRequeue), maxRequeue)
}
