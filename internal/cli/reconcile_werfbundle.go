package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

// WerfBundle condition reasons the CLI tells apart (the controller's, see docs/werfbundle.md).
const (
	werfReasonProgressing = "Progressing"
	werfReasonSuspended   = "Suspended"
)

// ReconcileWerfBundleOptions are slipway reconcile werfbundle's.
type ReconcileWerfBundleOptions struct {
	f    *Factory
	Name string
}

// NewCmdReconcileWerfBundle is `slipway reconcile werfbundle NAME`.
func NewCmdReconcileWerfBundle(f *Factory, runF func(context.Context, *ReconcileWerfBundleOptions) error) *cobra.Command {
	opts := &ReconcileWerfBundleOptions{f: f}
	cmd := &cobra.Command{
		Use:     "werfbundle NAME",
		Aliases: []string{"werfbundles", "wb"},
		Short:   "Poll the registry now, retry a failed deploy, and wait for the result",
		Long: `Set the werf.io/reconcile-now annotation: the operator polls the registry at once, retries a
failed revision and resets the drift correction count. Then wait until it has acted on that
request, and until the deploy Job it started (if any) has ended, and print the WerfBundle.

Exit 0 when Ready, 1 with the Ready message when not (a failed deploy, a registry being retried),
8 when --timeout passed first.`,
		Example: `  slipway reconcile werfbundle my-app -n my-app-prod
  slipway reconcile wb my-app --timeout 10m -o yaml`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeNames(werfBundleKind),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return reconcileWerfBundleRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func reconcileWerfBundleRun(ctx context.Context, opts *ReconcileWerfBundleOptions) error {
	f := opts.f
	kc, err := f.kubeConn()
	if err != nil {
		return err
	}
	k := werfBundleKind
	o, err := k.get(ctx, kc, kc.namespace, opts.Name)
	if err != nil {
		return err
	}
	b := o.(*werfv1.WerfBundle)
	if b.Spec.Suspend {
		return fmt.Errorf("werfbundle %s/%s is suspended: resume it first (slipway resume werfbundle %s -n %s)", b.Namespace, b.Name, b.Name, b.Namespace)
	}
	// A new value each time: the operator acts on a value once.
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	kubeLog{f.IOStreams.ErrOut}.step("Asking the operator to reconcile WerfBundle %s/%s", b.Namespace, b.Name)
	before := b.DeepCopy()
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[werfv1.ReconcileNowAnnotation] = requested
	if err := kc.patchObject(ctx, k, before, b); err != nil {
		return k.kubeErr(err, b.Namespace, b.Name)
	}
	return waitResult(ctx, f, kc, k, types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, func(o kubeObject) (waitState, string) {
		b := o.(*werfv1.WerfBundle)
		if b.Spec.Suspend {
			return stateFailed, "suspended while waiting: the request is acted on once it is resumed"
		}
		state, msg := werfBundleOutcome(b, b.Status.LastHandledReconcileNow == requested)
		if state == stateFailed {
			msg += fmt.Sprintf("\nslipway logs werfbundle %s -n %s prints the last Job's log.", b.Name, b.Namespace)
		}
		return state, msg
	})
}

// werfBundleOutcome reads a WerfBundle after a request (reconcile-now, resume) the operator has
// acted on when handled: pending while it has not, or while a Job it started runs; then failed
// while the registry is being retried or Ready is False, succeeded when Ready is True. The
// message is Ready's (or what is pending).
func werfBundleOutcome(b *werfv1.WerfBundle, handled bool) (waitState, string) {
	if !handled {
		return statePending, "Waiting for the operator to act on the request"
	}
	rec := conditions.Get(b.Status.Conditions, conditions.Reconciling)
	working := rec != nil && rec.Status == metav1.ConditionTrue
	switch {
	case b.Status.ActiveJob != "" && working:
		return statePending, rec.Message
	case b.Status.ActiveJob != "":
		return statePending, fmt.Sprintf("Job %s runs", b.Status.ActiveJob)
	case working && rec.Reason == werfReasonProgressing:
		return statePending, rec.Message
	case working:
		return stateFailed, rec.Reason + ": " + rec.Message
	}
	ready := conditions.Get(b.Status.Conditions, conditions.Ready)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		return statePending, "Waiting for the Ready condition"
	case ready.Reason == werfReasonSuspended:
		return statePending, "Waiting for the operator to resume it"
	case ready.Status == metav1.ConditionTrue:
		return stateSucceeded, ready.Message
	}
	return stateFailed, ready.Reason + ": " + ready.Message
}
