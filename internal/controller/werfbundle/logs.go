package werfbundle

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/joblog/ctrlpods"
)

// LogReader reads the end of a container's log (see package joblog).
type LogReader = joblog.Reader

// PodLogs reads logs through the API server.
type PodLogs = joblog.PodLogs

// Labels and annotations of a log ConfigMap.
const (
	LabelLogResult      = "werf.io/result"
	AnnotationFinished  = "werf.io/finished-at"
	AnnotationJob       = "werf.io/job"
	AnnotationRetention = "werf.io/retention-days"
	logKey              = "log"
	logPrefix           = "werf-log-"
)

// jobOutput finds the Job's last pod and returns its container exit code (-1 when unknown) and
// the end of its log: from pods/log, or, when the node cannot be asked, from the container's
// termination message (joblog.ContainerTail).
func (r *Reconciler) jobOutput(ctx context.Context, j *batchv1.Job) (exit int32, tail string, logErr error) {
	exit = -1
	last, err := joblog.LastPod(ctx, ctrlpods.Pods(r.APIReader), j)
	if err != nil {
		return exit, "", err
	}
	for _, cs := range last.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Terminated != nil {
			exit = cs.State.Terminated.ExitCode
		}
	}
	tail, logErr = joblog.ContainerTail(ctx, r.Logs, last, containerName, r.LogBytes)
	return exit, tail, logErr
}

// storeLog keeps the Job's log in a ConfigMap in the operator's namespace until it expires
// (logRetentionDays). Returns the ConfigMap's name, or "" when there is no log store.
func (r *Reconciler) storeLog(ctx context.Context, b *werfv1.WerfBundle, j *batchv1.Job, ok bool, tail string, logErr error) (string, error) {
	if r.OperatorNamespace == "" {
		return "", nil
	}
	result := "succeeded"
	if !ok {
		result = "failed"
	}
	if tail == "" && logErr != nil {
		tail = fmt.Sprintf("(log unavailable: %v)", logErr)
	}
	labels := bundleLabels(b)
	labels[LabelJobKind] = j.Labels[LabelJobKind]
	labels[LabelLogResult] = result
	days := b.Spec.Converge.LogRetentionDays
	if days <= 0 {
		days = 7
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      logPrefix + j.Name,
			Namespace: r.OperatorNamespace,
			Labels:    labels,
			Annotations: map[string]string{
				AnnotationJob:       j.Namespace + "/" + j.Name,
				AnnotationTag:       j.Annotations[AnnotationTag],
				AnnotationFinished:  r.Clock.Now().UTC().Format(time.RFC3339),
				AnnotationRetention: strconv.Itoa(int(days)),
			},
		},
		Data: map[string]string{logKey: tailBytes(tail, int(r.LogBytes))},
	}
	if err := r.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("storing the log of Job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return cm.Name, nil
}

// tailBytes keeps the last max bytes of s, cut at a line start.
func tailBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return s
}

// tailLines keeps the last n lines of s, at most max bytes.
func tailLines(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return tailBytes(strings.Join(lines, "\n"), max)
}

// LogPruner deletes stored Job logs older than their retention. It runs on the leader.
type LogPruner struct {
	// Reader lists uncached (the operator does not cache ConfigMaps); Writer deletes.
	Reader    client.Reader
	Writer    client.Writer
	Namespace string
	Every     time.Duration
	Now       func() time.Time
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (p *LogPruner) NeedLeaderElection() bool { return true }

// Start prunes now and then every p.Every until ctx ends.
func (p *LogPruner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("werfbundle-log-pruner")
	t := time.NewTicker(p.Every)
	defer t.Stop()
	for {
		if n, err := p.Prune(ctx); err != nil {
			log.Error(err, "Failed to prune Job logs")
		} else if n > 0 {
			log.Info("Pruned Job logs", "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Prune deletes expired logs and returns how many.
func (p *LogPruner) Prune(ctx context.Context) (int, error) {
	var list corev1.ConfigMapList
	if err := p.Reader.List(ctx, &list, client.InNamespace(p.Namespace),
		client.MatchingLabels{LabelManagedBy: ManagedByValue, LabelComponent: ComponentValue}); err != nil {
		return 0, err
	}
	now := p.Now()
	n := 0
	for i := range list.Items {
		cm := &list.Items[i]
		finished, err := time.Parse(time.RFC3339, cm.Annotations[AnnotationFinished])
		if err != nil {
			continue
		}
		days, err := strconv.Atoi(cm.Annotations[AnnotationRetention])
		if err != nil || days <= 0 {
			days = 7
		}
		if now.Sub(finished) < time.Duration(days)*24*time.Hour {
			continue
		}
		if err := p.Writer.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
