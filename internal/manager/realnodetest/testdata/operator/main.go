// Command operator is the test operator the manager's real-node suite builds into an image: a
// controller-runtime controller that reconciles the Widgets of every namespace, as most operators
// do (a Ready condition naming the version that reconciled it, and observedGeneration), serves controller-runtime's metrics on :8080, its health probes on
// :8081 (/healthz, /readyz) and a validating admission webhook for Widgets on :9443 (certificate
// and key in --cert-dir), and talks to the API server in-cluster. --mode makes it a broken
// version, the way real operators break after they came up (so that an install's readiness wait
// passes and only the manager's health checks can tell):
//
//	ok       works
//	crash    exits 1 --fail-after its start (the kubelet restarts it into CrashLoopBackOff)
//	unready  keeps running, but its readiness check fails from --fail-after on
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var widget = schema.GroupVersionKind{Group: "charttest.slipway.dev", Version: "v1alpha1", Kind: "Widget"}

func main() {
	mode := flag.String("mode", "ok", "ok, crash or unready")
	failAfter := flag.Duration("fail-after", 4*time.Second, "when a crash or unready version fails, after its start")
	version := flag.String("version", "", "the version it is (for its log)")
	certDir := flag.String("cert-dir", "/tls", "the webhook's tls.crt and tls.key")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("version", *version, "mode", *mode)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
	if err := run(log, *mode, *version, *failAfter, *certDir); err != nil {
		log.Error("operator: stopped", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, mode, version string, failAfter time.Duration, certDir string) error {
	start := time.Now()
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		return errors.New("POD_NAMESPACE is not set")
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: ":8080"},
		HealthProbeBindAddress: ":8081",
		WebhookServer:          webhook.NewServer(webhook.Options{Port: 9443, CertDir: certDir}),
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	ready := func(*http.Request) error {
		if mode == "unready" && time.Since(start) > failAfter {
			return fmt.Errorf("not ready since %s after the start (version built to fail its readiness check)", failAfter)
		}
		return nil
	}
	if err := mgr.AddReadyzCheck("ready", ready); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register("/validate", &webhook.Admission{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })})
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widget)
	if err := ctrl.NewControllerManagedBy(mgr).Named("widget").For(u).Complete(&reconciler{cl: mgr.GetClient(), version: version}); err != nil {
		return err
	}
	if mode == "crash" {
		go func() {
			time.Sleep(failAfter)
			log.Error("operator: crashing (version built to exit after its start)", "after", failAfter)
			os.Exit(1)
		}()
	}
	log.Info("operator: starting", "namespace", ns)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// reconciler sets each Widget's Ready condition (naming its version) and observedGeneration.
type reconciler struct {
	cl      client.Client
	version string
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widget)
	if err := r.cl.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if og == u.GetGeneration() {
		return reconcile.Result{}, nil
	}
	_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Reconciled", "message": "reconciled by the operator's pod, version " + r.version,
		"observedGeneration": u.GetGeneration(), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}}, "status", "conditions")
	return reconcile.Result{}, r.cl.Status().Update(ctx, u)
}
