package cli

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

// NewCmdSuspend is `slipway suspend KIND NAME`.
func NewCmdSuspend(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "suspend KIND NAME",
		Short:   "Stop an operator acting on an object until it is resumed",
		GroupID: groupCluster,
		RunE:    unknownKubeKind("werfbundle"),
	}
	f.addKubeFlags(cmd)
	cmd.AddCommand(NewCmdSuspendWerfBundle(f, nil))
	return cmd
}

// SuspendWerfBundleOptions are slipway suspend werfbundle's and slipway resume werfbundle's.
type SuspendWerfBundleOptions struct {
	f    *Factory
	Name string
	// Wait (resume) waits for the operator's first reconcile after resuming.
	Wait bool
}

// NewCmdSuspendWerfBundle is `slipway suspend werfbundle NAME`.
func NewCmdSuspendWerfBundle(f *Factory, runF func(context.Context, *SuspendWerfBundleOptions) error) *cobra.Command {
	opts := &SuspendWerfBundleOptions{f: f}
	return &cobra.Command{
		Use:     "werfbundle NAME",
		Aliases: []string{"werfbundles", "wb"},
		Short:   "Stop polling, deploys and drift correction (spec.suspend: true)",
		Long: `Set spec.suspend: the operator stops polling the registry, deploying and correcting drift
for this WerfBundle; a Job already running finishes. slipway resume werfbundle undoes it.`,
		Example:           "  slipway suspend werfbundle my-app -n my-app-prod",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeNames(werfBundleKind),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return setWerfBundleSuspend(cmd.Context(), opts, true)
		},
	}
}

// setWerfBundleSuspend patches spec.suspend; resuming with opts.Wait then waits for the result
// of the operator's first reconcile after it.
func setWerfBundleSuspend(ctx context.Context, opts *SuspendWerfBundleOptions, suspend bool) error {
	f := opts.f
	log := kubeLog{f.IOStreams.ErrOut}
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
	verb, past := "Suspending", "suspended"
	if !suspend {
		verb, past = "Resuming", "resumed"
	}
	if b.Spec.Suspend == suspend {
		if suspend {
			log.done("WerfBundle %s/%s is already suspended", b.Namespace, b.Name)
		} else {
			log.done("WerfBundle %s/%s is not suspended", b.Namespace, b.Name)
		}
		return nil
	}
	log.step("%s WerfBundle %s/%s", verb, b.Namespace, b.Name)
	before := b.DeepCopy()
	b.Spec.Suspend = suspend
	if err := kc.patchObject(ctx, k, before, b); err != nil {
		return k.kubeErr(err, b.Namespace, b.Name)
	}
	if suspend || !opts.Wait {
		log.done("WerfBundle %s/%s %s", b.Namespace, b.Name, past)
		return nil
	}
	gen := b.Generation
	return waitResult(ctx, f, kc, k, types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, func(o kubeObject) (waitState, string) {
		b := o.(*werfv1.WerfBundle)
		if b.Spec.Suspend {
			return stateFailed, "suspended again while waiting"
		}
		return werfBundleOutcome(b, reconciledSince(b, gen))
	})
}

// reconciledSince reports whether the operator has reconciled the bundle at generation gen or
// later: the status says it observed it, or a condition was written for it (a registry being
// retried leaves the status's observedGeneration behind but sets Reconciling).
func reconciledSince(b *werfv1.WerfBundle, gen int64) bool {
	if b.Status.ObservedGeneration >= gen {
		return true
	}
	for _, c := range b.Status.Conditions {
		if c.ObservedGeneration >= gen && c.Reason != werfReasonSuspended {
			return true
		}
	}
	return false
}
