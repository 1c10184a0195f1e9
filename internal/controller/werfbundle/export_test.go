package werfbundle

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

// CheckJobForTest is the drift-check Job (`werf bundle plan … --exit-code`) the Reconciler makes
// for b at tag, in b's namespace, without values or credentials: the real-node test runs it
// without waiting for a drift interval (at least a minute).
func CheckJobForTest(b *werfv1.WerfBundle, image string, env []corev1.EnvVar, tag string) *batchv1.Job {
	req := jobRequest{Kind: KindCheck, Tag: tag, Revision: "real-node", Nonce: "now"}
	js := jobSpec{bundle: b, targetNS: b.Namespace, release: b.Name, image: image, deadline: int64(DefaultJobDeadline.Seconds()),
		extraEnv: env, repoForWerf: b.Spec.Registry.URL, secretName: jobName(b, req)}
	return buildJob(js, req)
}

// StopForTest runs what the manager's stop runs for r: the deferred status writes are written.
func StopForTest(r *Reconciler) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = statusFlusher{r: r}.Start(ctx)
}
