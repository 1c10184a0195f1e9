package catalyst

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// DefaultBuildNamespace holds the build Jobs and their Secrets: the install creates it
// (config/manager/builds.yaml) at Pod Security level baseline, which Kaniko needs. The operator's
// own namespace is restricted, which would refuse every build pod.
const DefaultBuildNamespace = "slipway-builds"

// Pod Security levels, from the most permissive.
const (
	levelPrivileged = "privileged"
	levelBaseline   = "baseline"
	levelRestricted = "restricted"
)

var levelRank = map[string]int{levelPrivileged: 0, levelBaseline: 1, levelRestricted: 2}

// engineLevel is the most restrictive Pod Security level that admits the engine's pod: Kaniko runs
// as root (baseline); rootless BuildKit runs without seccomp and AppArmor filtering to create its
// user namespaces (privileged).
func engineLevel(engine catalystv1alpha1.BuildEngine) string {
	if engine == catalystv1alpha1.BuildEngineBuildKit {
		return levelPrivileged
	}
	return levelBaseline
}

// buildNamespaceRefusal says why the namespace's Pod Security level would refuse the engine's
// build pod, "" when it admits it. A namespace without the enforce label is at the cluster's
// default, privileged unless the API server's admission configuration says otherwise.
func buildNamespaceRefusal(ns *corev1.Namespace, engine catalystv1alpha1.BuildEngine) string {
	level := ns.Labels[labelPodSecurityEnforce]
	if level == "" {
		level = levelPrivileged
	}
	rank, known := levelRank[level]
	need := engineLevel(engine)
	if known && rank <= levelRank[need] {
		return ""
	}
	if engine == "" {
		engine = catalystv1alpha1.BuildEngineKaniko
	}
	return fmt.Sprintf("the build namespace %s enforces Pod Security level %q, which refuses %s build pods (they need %s); label it %s=%s, or give the operator another build namespace (--catalyst-build-namespace)",
		ns.Name, level, engine, need, labelPodSecurityEnforce, need)
}

// buildNamespaceRecheck is how often an environment held back by its build namespace looks
// again (the namespace is not watched).
const buildNamespaceRecheck = time.Minute

// checkBuildNamespace fails the build when the build namespace is missing or would refuse the
// engine's pods, instead of making a Job whose pods are never created.
func (r *EnvironmentReconciler) checkBuildNamespace(ctx context.Context, s *envScope) error {
	ns := &corev1.Namespace{}
	err := r.Get(ctx, client.ObjectKey{Name: r.BuildNamespace}, ns)
	msg := ""
	switch {
	case apierrors.IsNotFound(err):
		msg = fmt.Sprintf("the build namespace %s does not exist; the install creates it (config/manager/builds.yaml), or give the operator another one (--catalyst-build-namespace)", r.BuildNamespace)
	case err != nil:
		return fmt.Errorf("reading the build namespace %s: %w", r.BuildNamespace, err)
	default:
		msg = buildNamespaceRefusal(ns, s.project.Spec.Build.Engine)
	}
	if msg == "" {
		return nil
	}
	s.fail(&failure{condition: catalystv1alpha1.BuildReadyCondition, reason: catalystv1alpha1.BuildNamespaceRefusedReason,
		phase: catalystv1alpha1.PhaseFailed, stalled: true, message: msg})
	s.requeue(buildNamespaceRecheck)
	return errStop
}
