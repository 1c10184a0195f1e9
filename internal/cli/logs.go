package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/joblog"
)

// NewCmdLogs is `slipway logs KIND NAME`.
func NewCmdLogs(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "logs KIND NAME",
		Short:   "Print the log of the last Job an operator ran for an object",
		GroupID: groupCluster,
		RunE:    unknownKubeKind("werfbundle"),
	}
	f.addKubeFlags(cmd)
	cmd.AddCommand(NewCmdLogsWerfBundle(f, nil))
	return cmd
}

// defaultOperatorNamespace is where the chart installs the operator (docs/chart.md), which
// keeps the WerfBundle Job logs.
const defaultOperatorNamespace = "slipway-system"

// werfContainer is the converge Job's container.
const werfContainer = "werf"

// LogsWerfBundleOptions are slipway logs werfbundle's.
type LogsWerfBundleOptions struct {
	f      *Factory
	Name   string
	Follow bool
	// Tail is how many of the last lines to print (negative: all).
	Tail              int64
	OperatorNamespace string
}

// NewCmdLogsWerfBundle is `slipway logs werfbundle NAME`.
func NewCmdLogsWerfBundle(f *Factory, runF func(context.Context, *LogsWerfBundleOptions) error) *cobra.Command {
	opts := &LogsWerfBundleOptions{f: f}
	cmd := &cobra.Command{
		Use:     "werfbundle NAME",
		Aliases: []string{"werfbundles", "wb"},
		Short:   "Print the log of the WerfBundle's running Job, or else of its last finished one",
		Long: `Print the werf log of the WerfBundle's Job: the one running now (status.activeJob), else the
last finished one (status.lastFinishedJob), read from its pod through the API server as kubectl
logs does; --follow streams a running Job's log until it ends (or --timeout passes: exit 8). When the Job's pods are gone (its
TTL passed), the log the operator stored is printed instead: the last 64 KiB, kept
logRetentionDays in a ConfigMap of the operator's namespace (--operator-namespace).`,
		Example: `  slipway logs werfbundle my-app -n my-app-prod
  slipway logs wb my-app --follow
  slipway logs wb my-app --tail 20`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeNames(werfBundleKind),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return logsWerfBundleRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "stream the log of a running Job until it ends")
	fl.Int64Var(&opts.Tail, "tail", -1, "print only this many of the last lines (-1: all)")
	fl.StringVar(&opts.OperatorNamespace, "operator-namespace", defaultOperatorNamespace, "the operator's namespace, where it keeps the logs of Jobs whose pods are gone")
	return cmd
}

func logsWerfBundleRun(ctx context.Context, opts *LogsWerfBundleOptions) error {
	f := opts.f
	kc, err := f.kubeConn()
	if err != nil {
		return err
	}
	o, err := werfBundleKind.get(ctx, kc, kc.namespace, opts.Name)
	if err != nil {
		return err
	}
	b := o.(*werfv1.WerfBundle)
	target := b.Spec.Converge.TargetNamespace
	if target == "" {
		target = b.Namespace
	}
	job, state := b.Status.ActiveJob, "running"
	if job == "" {
		job, state = b.Status.LastFinishedJob, "finished"
	}
	if job == "" {
		return fmt.Errorf("werfbundle %s/%s has run no Job yet (%s)", b.Namespace, b.Name, werfBundleReadyLine(b))
	}
	err = streamJobLog(ctx, f, kc, types.NamespacedName{Namespace: target, Name: job}, state, opts)
	if (errors.Is(err, joblog.ErrNoPods) || apierrors.IsNotFound(err)) && state == "finished" && b.Status.LastJobLog != "" {
		return printStoredLog(ctx, f, kc, b, job, opts)
	}
	return err
}

// werfBundleReadyLine is the bundle's Ready condition in a few words.
func werfBundleReadyLine(b *werfv1.WerfBundle) string {
	ready, status := readyCells(b.Status.Conditions)
	return "Ready " + ready + ": " + status
}

// streamJobLog copies the log of the Job's last pod to standard output.
func streamJobLog(ctx context.Context, f *Factory, kc *kubeConn, key types.NamespacedName, state string, opts *LogsWerfBundleOptions) error {
	j := &batchv1.Job{}
	if err := getInto(ctx, kc.dyn.Resource(jobsResource), key.Namespace, key.Name, j); err != nil {
		if apierrors.IsForbidden(err) {
			return &AuthError{Err: err}
		}
		return fmt.Errorf("Job %s/%s: %w", key.Namespace, key.Name, err)
	}
	pod, err := joblog.LastPod(ctx, kc, j)
	if err != nil {
		return fmt.Errorf("Job %s/%s: %w", key.Namespace, key.Name, err)
	}
	container := werfContainer
	if len(pod.Spec.Containers) > 0 && !hasContainer(pod, werfContainer) {
		container = pod.Spec.Containers[0].Name
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "► Log of Job %s/%s (%s), pod %s\n", key.Namespace, key.Name, state, pod.Name)
	// A finished Job's log is whole: nothing to follow.
	follow := opts.Follow && state == "running"
	lo := &corev1.PodLogOptions{Container: container, Follow: follow}
	if opts.Tail >= 0 {
		lo.TailLines = &opts.Tail
	}
	rc, err := kc.logs.Stream(ctx, pod.Namespace, pod.Name, lo)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return &AuthError{Err: err}
		}
		return fmt.Errorf("reading the log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer func() { _ = rc.Close() }()
	_, err = io.Copy(f.IOStreams.Out, rc)
	if follow && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Pending("Job %s/%s still runs after --timeout %s", key.Namespace, key.Name, f.Global.Timeout)
	}
	return err
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// printStoredLog prints the log the operator stored for the bundle's last finished Job.
func printStoredLog(ctx context.Context, f *Factory, kc *kubeConn, b *werfv1.WerfBundle, job string, opts *LogsWerfBundleOptions) error {
	cm := &corev1.ConfigMap{}
	err := getInto(ctx, kc.dyn.Resource(configMapsResource), opts.OperatorNamespace, b.Status.LastJobLog, cm)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the pods of Job %s are gone, and its stored log %s is not in namespace %s (logs are kept logRetentionDays; --operator-namespace names the operator's namespace)",
			job, b.Status.LastJobLog, opts.OperatorNamespace)
	case apierrors.IsForbidden(err):
		return &AuthError{Err: fmt.Errorf("the pods of Job %s are gone, and reading its stored log was refused: %w", job, err)}
	case err != nil:
		return err
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "► The pods of Job %s are gone: the log the operator stored (%s/%s, its last 64 KiB)\n",
		job, opts.OperatorNamespace, cm.Name)
	_, err = io.WriteString(f.IOStreams.Out, lastLines(cm.Data["log"], opts.Tail))
	return err
}

// lastLines keeps the last n lines of s (n < 0: all of it).
func lastLines(s string, n int64) string {
	if n < 0 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if int64(len(lines)) > n {
		lines = lines[int64(len(lines))-n:]
	}
	return strings.Join(lines, "")
}
