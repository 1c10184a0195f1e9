package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rolling upgrade of a control plane would)
// and starts it again on the same etcd, address, port, serving certificate, client CA and
// service-account key. Every client and kubeconfig made before keeps working, and the other
// components (controller-manager, scheduler, kwok) ride it out and reconnect on their own. It
// returns once the new apiserver is ready (/readyz), with how long the API was unavailable.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) (time.Duration, error) {
	if cp.Env == nil || cp.Config == nil {
		return 0, errors.New("controlplane: RestartAPIServer on a control plane that is not running")
	}
	apiserver := cp.Env.ControlPlane.GetAPIServer()
	if apiserver.CertDir != cp.certDir {
		return 0, fmt.Errorf("controlplane: the apiserver's certificates are in %q, not in the control plane's %q", apiserver.CertDir, cp.certDir)
	}
	stopped := time.Now()
	if err := apiserver.Stop(); err != nil {
		return 0, fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	var err error
	spawnThread(func() {
		before := children("kube-apiserver")
		err = apiserver.Start()
		cp.apiserverPIDs = newChildren(before, "kube-apiserver")
	})
	if err != nil {
		return time.Since(stopped), fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	if err := cp.waitReady(ctx); err != nil {
		return time.Since(stopped), err
	}
	return time.Since(stopped), nil
}

// waitReady polls the apiserver's /readyz (every informer and post-start hook done) with the
// admin credentials until it answers ok.
func (cp *ControlPlane) waitReady(ctx context.Context) error {
	if err := waitReadyz(ctx, cp.Config); err != nil {
		return fmt.Errorf("after its restart (logs in %s): %w", cp.LogDir, err)
	}
	return nil
}
