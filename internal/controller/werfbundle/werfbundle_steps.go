package werfbundle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle/tags"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/operator/jobsecret"
	"github.com/slipway-dev/slipway/internal/registry"
)

// Reasons used in conditions and events.
const (
	ReasonSucceeded             = "Succeeded"
	ReasonProgressing           = "Progressing"
	ReasonSuspended             = "Suspended"
	ReasonInvalidSpec           = "InvalidSpec"
	ReasonRegistryUnavailable   = "RegistryUnavailable"
	ReasonRegistryAuthFailed    = "RegistryAuthFailed"
	ReasonRegistryNotFound      = "RepositoryNotFound"
	ReasonRegistryRetrying      = "RegistryRetrying"
	ReasonCredentialsInvalid    = "CredentialsInvalid"
	ReasonNoMatchingTag         = "NoMatchingTag"
	ReasonNewTag                = "NewTag"
	ReasonValuesInvalid         = "ValuesInvalid"
	ReasonTargetNamespaceAbsent = "TargetNamespaceNotFound"
	ReasonServiceAccountAbsent  = "ServiceAccountNotFound"
	ReasonJobCreated            = "JobCreated"
	ReasonDeployFailed          = "DeployFailed"
	ReasonRollingBack           = "RollingBack"
	ReasonDriftDetected         = "DriftDetected"
	ReasonNoDrift               = "NoDrift"
	ReasonDriftCheckFailed      = "DriftCheckFailed"
	ReasonDriftCorrecting       = "DriftCorrecting"
	ReasonDriftNotCorrected     = "DriftCorrectionExhausted"
	// ReasonCrossNamespaceRefused: the target namespace does not accept bundles from the
	// bundle's namespace (see AcceptBundlesFromAnnotation).
	ReasonCrossNamespaceRefused = "CrossNamespaceRefused"
)

// stepResolve fills in defaults and parses what the schema cannot fully check.
func (r *Reconciler) stepResolve(_ context.Context, s *scope) error {
	b := s.bundle
	s.targetNS = b.Spec.Converge.TargetNamespace
	if s.targetNS == "" {
		s.targetNS = b.Namespace
	}
	s.release = b.Spec.Converge.ReleaseName
	if s.release == "" {
		s.release = b.Name
	}
	c, err := tags.ParseConstraint(b.Spec.Registry.VersionConstraint)
	if err != nil {
		s.fail(&failure{reason: ReasonInvalidSpec, message: err.Error(), stalled: true})
		return stop("invalid constraint")
	}
	s.constraint = c
	if v := b.Annotations[werfv1.ReconcileNowAnnotation]; v != "" && v != b.Status.LastHandledReconcileNow {
		// A requested reconcile polls now and retries a failed revision.
		b.Status.LastHandledReconcileNow = v
		b.Status.LastFailedRevision = ""
		if b.Status.Drift != nil {
			b.Status.Drift.Corrections = 0
		}
		r.polls.trigger(client.ObjectKeyFromObject(b))
	}
	r.stepPush(s)
	return nil
}

// stepPoll asks the registry for tags when a poll is due, with the stored ETag, and selects the
// highest tag matching the constraint. A registry failure backs off; Jobs are still tracked.
func (r *Reconciler) stepPoll(ctx context.Context, s *scope) error {
	b := s.bundle
	key := client.ObjectKeyFromObject(b)
	st := b.Status.Registry
	sameSpec := st != nil && st.URL == b.Spec.Registry.URL && st.VersionConstraint == b.Spec.Registry.VersionConstraint
	if sameSpec {
		s.latestTag = st.LatestTag
	}
	schedule := pollSchedule(b)
	if wait, due := r.polls.due(key, schedule, s.now); sameSpec && !due {
		s.requeue(wait)
		return nil
	}

	lister, err := r.registryClient(ctx, s)
	if err != nil {
		registryPolls.WithLabelValues(pollResultFailed).Inc()
		return r.pollFailed(s, err)
	}
	etag := ""
	if sameSpec {
		etag = st.ETag
	}
	start := time.Now()
	list, err := lister.ListTags(ctx, b.Spec.Registry.URL, etag)
	s.registryTime = time.Since(start)
	observePoll(list, s.registryTime)
	s.polled = true
	if err != nil {
		registryPolls.WithLabelValues(pollResultFailed).Inc()
		return r.pollFailed(s, err)
	}
	interval := defaultPollInterval
	if pi := b.Spec.Registry.PollInterval; pi != nil && pi.Duration > 0 {
		interval = pi.Duration
	}
	next := jitter(interval)
	r.polls.schedule(key, schedule, s.now.Add(next))
	s.requeue(next)
	if b.Status.LastFailedRevision == "" && b.Status.ConsecutiveFailures > 0 {
		b.Status.ConsecutiveFailures = 0
	}
	if list.NotModified && sameSpec {
		registryPolls.WithLabelValues(pollResultUnchanged).Inc()
		s.notModified = true
		return nil
	}
	digest := tagsDigest(list.Tags)
	if sameSpec && st.TagsDigest == digest {
		registryPolls.WithLabelValues(pollResultUnchanged).Inc()
	} else {
		registryPolls.WithLabelValues(pollResultChanged).Inc()
	}
	sel, err := s.constraint.Select(list.Tags)
	latest := sel.Tag
	if errors.Is(err, tags.ErrNoMatch) {
		s.noMatch = err
		latest = ""
	} else if err != nil {
		return err
	}
	if latest != "" && latest != s.latestTag {
		newTagsFound.Inc()
		s.eventf(false, ReasonNewTag, fmt.Sprintf("Found tag %s in %s", latest, b.Spec.Registry.URL))
	}
	s.latestTag = latest
	b.Status.Registry = &werfv1.RegistryStatus{
		URL:               b.Spec.Registry.URL,
		VersionConstraint: b.Spec.Registry.VersionConstraint,
		ETag:              list.ETag,
		TagsDigest:        digest,
		LatestTag:         latest,
	}
	return nil
}

// pollFailed counts a registry failure and schedules the retry: 30s, 1m, 2m, 4m, 8m, each ±10 %,
// or what a 429's Retry-After asks plus up to 10 % (retryDelay). From the fifth failure in a row
// the bundle is Failed.
func (r *Reconciler) pollFailed(s *scope, err error) error {
	b := s.bundle
	b.Status.ConsecutiveFailures++
	wait := retryDelay(b.Status.ConsecutiveFailures, err, rand.Float64())
	backoffSeconds.WithLabelValues(b.Namespace, b.Name).Set(wait.Seconds())
	r.polls.schedule(client.ObjectKeyFromObject(b), pollSchedule(b), s.now.Add(wait))
	s.requeue(wait)
	reason, stalled := ReasonRegistryUnavailable, false
	switch {
	case errors.Is(err, errCredentials):
		reason, stalled = ReasonCredentialsInvalid, true
	case registry.IsAuth(err):
		reason, stalled = ReasonRegistryAuthFailed, true
	case registry.IsNotFound(err):
		reason, stalled = ReasonRegistryNotFound, true
	}
	msg := fmt.Sprintf("registry %s: %v (failure %d in a row; next try in %s)",
		b.Spec.Registry.URL, err, b.Status.ConsecutiveFailures, wait.Round(1e9))
	if b.Status.ConsecutiveFailures >= maxConsecutiveFailures {
		s.fail(&failure{reason: reason, message: msg + hint(reason), stalled: stalled, counts: true})
	} else {
		s.registryRetry = msg + hint(reason)
	}
	return nil
}

func hint(reason string) string {
	switch reason {
	case ReasonCredentialsInvalid:
		return "; fix the Secret this message names"
	case ReasonRegistryAuthFailed:
		return "; check the credentials in spec.registry.secretRef and their pull rights"
	case ReasonRegistryNotFound:
		return "; check spec.registry.url"
	}
	return ""
}

// stepJobs reads this bundle's Jobs, records the outcome of one that finished, keeps its log,
// prunes old Jobs, and stops while a Job still runs: one Job at a time per bundle.
func (r *Reconciler) stepJobs(ctx context.Context, s *scope) error {
	b := s.bundle
	var list batchv1.JobList
	// Jobs run in the target namespace; listing only there keeps this a namespace-index lookup
	// in the cache instead of a scan of every Job.
	if err := r.List(ctx, &list, client.InNamespace(s.targetNS), client.MatchingLabels{
		LabelComponent: ComponentValue, LabelBundleNamespace: b.Namespace, LabelBundleName: b.Name,
	}); err != nil {
		return fmt.Errorf("listing Jobs: %w", err)
	}
	if moved, err := r.shard.adopt(ctx, b, s.targetNS, list.Items); err != nil || moved {
		if err == nil {
			s.requeue(jobAdoptionWait)
			err = stop("Jobs moved from another shard")
		}
		return err
	}
	s.jobs = list.Items
	sort.Slice(s.jobs, func(i, j int) bool {
		return s.jobs[j].CreationTimestamp.Before(&s.jobs[i].CreationTimestamp)
	})
	var finished []*batchv1.Job
	for i := range s.jobs {
		j := &s.jobs[i]
		if done, _ := joblog.Finished(j); !done {
			if s.active == nil && j.DeletionTimestamp.IsZero() {
				s.active = j
			}
			continue
		}
		finished = append(finished, j)
	}
	// A Job the status does not know as active was made by a reconcile that stopped before it
	// recorded it: finish that reconcile's writes.
	if j := s.active; j != nil && j.Name != b.Status.ActiveJob {
		if err := r.adoptJobSecret(ctx, j); err != nil {
			return err
		}
		adoptCorrection(b, j)
	}
	// Record the newest finished Job if it is new to the status.
	if j := unrecorded(b, finished); j != nil {
		if j.Name != b.Status.ActiveJob {
			if err := r.adoptJobSecret(ctx, j); err != nil {
				return err
			}
			adoptCorrection(b, j)
		}
		if err := r.recordJob(ctx, s, j); err != nil {
			return err
		}
	}
	for _, j := range finished[min(len(finished), r.JobHistory):] {
		if err := r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting old Job %s: %w", j.Name, err)
		}
	}
	if s.active != nil {
		b.Status.ActiveJob = s.active.Name
		return stop("a Job is running")
	}
	b.Status.ActiveJob = ""
	return nil
}

// unrecorded is the newest finished Job (finished is sorted newest first) when its outcome is not
// in the status yet: the status records no Job, names it as the running one, or records a Job
// that is still there and older. When the recorded Job is gone (deleted by hand or by its TTL)
// and the status does not name the newest as running, that one is older than the recorded one
// (the recorded Job is always the newest the operator keeps), and recording it again would put an
// old outcome back: an old success would clear a later failure, an old failure count again.
func unrecorded(b *werfv1.WerfBundle, finished []*batchv1.Job) *batchv1.Job {
	if len(finished) == 0 || finished[0].Name == b.Status.LastFinishedJob {
		return nil
	}
	newest := finished[0]
	if b.Status.LastFinishedJob == "" || newest.Name == b.Status.ActiveJob {
		return newest
	}
	for _, j := range finished[1:] {
		if j.Name == b.Status.LastFinishedJob {
			return newest
		}
	}
	return nil
}

// recordJob turns a finished Job into status, keeps its log and counts it.
func (r *Reconciler) recordJob(ctx context.Context, s *scope, j *batchv1.Job) error {
	b := s.bundle
	_, ok := joblog.Finished(j)
	kind := JobKind(j.Labels[LabelJobKind])
	exit, logTail, logErr := r.jobOutput(ctx, j)
	logName, err := r.storeLog(ctx, b, j, ok, logTail, logErr)
	if err != nil {
		return err
	}
	b.Status.LastFinishedJob = j.Name
	b.Status.LastJobLog = logName
	observeJob(kind, j, ok)
	tag := j.Annotations[AnnotationTag]
	switch {
	case kind == KindCheck:
		r.recordCheck(s, j, ok, exit, logTail)
	case ok && j.Annotations[AnnotationRollback] != "":
		// The last good tag is back; the failed revision stays failed until something changes.
		b.Status.LastAppliedTag = tag
		b.Status.LastAppliedRevision = j.Labels[LabelRevision]
		b.Status.LastSyncTime = completionTime(j, s.now)
		b.Status.LastFailedRevision = j.Annotations[AnnotationRollback]
		b.Status.LastErrorMessage = strings.TrimSpace(b.Status.LastErrorMessage + "\nrolled back to tag " + tag)
		s.eventf(false, ReasonRollingBack, fmt.Sprintf("Rolled back to tag %s with Job %s/%s", tag, j.Namespace, j.Name))
	case ok:
		b.Status.LastAppliedTag = tag
		b.Status.LastAppliedRevision = j.Labels[LabelRevision]
		b.Status.LastSyncTime = completionTime(j, s.now)
		b.Status.LastFailedRevision = ""
		b.Status.ConsecutiveFailures = 0
		b.Status.LastErrorMessage = ""
		s.eventf(false, ReasonSucceeded, fmt.Sprintf("Deployed tag %s with Job %s/%s", tag, j.Namespace, j.Name))
	default:
		b.Status.LastFailedRevision = j.Labels[LabelRevision]
		b.Status.ConsecutiveFailures++
		msg := fmt.Sprintf("deploy of tag %s failed (Job %s/%s): %s", tag, j.Namespace, j.Name, joblog.FailureMessage(j))
		if logTail != "" {
			msg += "\nlog tail:\n" + tailLines(logTail, 20, 2048)
		} else if logErr != nil {
			msg += fmt.Sprintf("\n(log unavailable: %v)", logErr)
		}
		b.Status.LastErrorMessage = msg
		s.jobFailed = msg
		s.eventf(true, ReasonDeployFailed, fmt.Sprintf("Deploy of tag %s failed with Job %s/%s", tag, j.Namespace, j.Name))
		if j.Annotations[AnnotationRollback] == "" && b.Spec.Converge.RollbackOnFailure &&
			b.Status.LastAppliedTag != "" && b.Status.LastAppliedRevision != j.Labels[LabelRevision] {
			s.rollbackOf = j.Labels[LabelRevision]
		}
	}
	return nil
}

func completionTime(j *batchv1.Job, now time.Time) *metav1.Time {
	if j.Status.CompletionTime != nil {
		t := *j.Status.CompletionTime
		return &t
	}
	t := metav1.NewTime(now)
	return &t
}

// stepDeploy makes the Job for the desired revision when it is neither deployed nor failed.
func (r *Reconciler) stepDeploy(ctx context.Context, s *scope) error {
	b := s.bundle
	if s.latestTag == "" {
		if s.noMatch != nil {
			s.fail(&failure{reason: ReasonNoMatchingTag, message: s.noMatch.Error() +
				"; publish a matching tag or change spec.registry.versionConstraint"})
		}
		return stop("no tag")
	}
	vals, err := r.loadValues(ctx, s)
	if err != nil {
		return err
	}
	if vals == nil {
		return stop("values")
	}
	s.valuesYAML = vals.yaml
	s.revision = revision(b, s.targetNS, s.release, s.latestTag, vals.hash, r.WerfImage)
	// The reconcile-now value is part of the Job's identity so a requested retry of a failed
	// revision gets a new Job; a restart still finds the same one.
	req := jobRequest{Kind: KindApply, Tag: s.latestTag, Revision: s.revision, Nonce: b.Status.LastHandledReconcileNow}
	switch {
	case s.rollbackOf != "":
		rev := revision(b, s.targetNS, s.release, b.Status.LastAppliedTag, vals.hash, r.WerfImage)
		req = jobRequest{Kind: KindApply, Tag: b.Status.LastAppliedTag, Revision: rev, RollbackOf: s.rollbackOf}
		s.eventf(true, ReasonRollingBack, fmt.Sprintf("Rolling back to tag %s", b.Status.LastAppliedTag))
	case s.revision == b.Status.LastAppliedRevision:
		return nil
	case s.revision == b.Status.LastFailedRevision:
		s.fail(&failure{reason: ReasonDeployFailed, message: b.Status.LastErrorMessage, counts: true})
		return stop("revision failed before")
	}
	if err := r.createJob(ctx, s, req); err != nil {
		return err
	}
	return stop("Job created")
}

// createJob checks the prerequisites, then writes the Job's Secret (values, registry credentials,
// CA), the Job, and the Job's ownership of the Secret, in that order: a crash or an error after
// any one write leaves a state the next reconcile completes (see "Write order" in
// docs/werfbundle.md). The names are deterministic, so a repeated write finds the object.
func (r *Reconciler) createJob(ctx context.Context, s *scope, req jobRequest) error {
	b := s.bundle
	// Existence checks read the metadata cache: no API request per deploy.
	if err := r.Get(ctx, types.NamespacedName{Name: s.targetNS}, metadataOf("Namespace")); err != nil {
		if apierrors.IsNotFound(err) {
			s.fail(&failure{reason: ReasonTargetNamespaceAbsent, stalled: true, message: fmt.Sprintf(
				"target namespace %q does not exist; create it or fix spec.converge.targetNamespace", s.targetNS)})
			s.requeue(jitter(prerequisiteRetryPeriod))
			return stop("no namespace")
		}
		return err
	}
	sa := types.NamespacedName{Namespace: s.targetNS, Name: b.Spec.Converge.ServiceAccountName}
	if err := r.Get(ctx, sa, metadataOf("ServiceAccount")); err != nil {
		if apierrors.IsNotFound(err) {
			s.fail(&failure{reason: ReasonServiceAccountAbsent, stalled: true, message: fmt.Sprintf(
				"ServiceAccount %s/%s does not exist; create it with the deploy permissions (see docs/werfbundle.md)", sa.Namespace, sa.Name)})
			s.requeue(jitter(prerequisiteRetryPeriod))
			return stop("no service account")
		}
		return err
	}
	secretData, err := r.jobSecretData(ctx, s)
	if err != nil {
		return err
	}
	if secretData == nil {
		return stop("registry secret")
	}
	js := jobSpec{
		bundle: b, targetNS: s.targetNS, release: s.release, image: r.WerfImage,
		hasValues: len(secretData[secretKeyValues]) > 0,
		hasDocker: len(secretData[secretKeyDocker]) > 0, hasCA: len(secretData[secretKeyCA]) > 0,
		deadline: int64(r.JobDeadline.Seconds()), backoff: r.JobBackoffLimit, decorate: r.DecoratePod,
		extraEnv: r.JobEnv, repoForWerf: b.Spec.Registry.URL,
	}
	js.secretName = jobName(b, req)
	job := buildJob(js, req)
	r.shard.label(b, job)

	// 1. The Secret, before anything can mount it. No values, credentials or CA: no Secret.
	var secret *corev1.Secret
	if len(secretData) > 0 {
		if err := r.sweepJobSecrets(ctx, s, job.Name); err != nil {
			return err
		}
		if secret, err = jobsecret.Ensure(ctx, r.Client, r.APIReader, jobSecret(job, secretData)); err != nil {
			return err
		}
	}
	// 2. The Job.
	if err := r.Create(ctx, job); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Job %s/%s: %w", job.Namespace, job.Name, err)
		}
		// Made by an earlier reconcile that did not see it yet, or by the shard the bundle was on
		// before: adopt it.
		if err := r.existing(ctx, b, job); err != nil {
			return err
		}
	} else {
		jobsCreated.WithLabelValues(string(req.Kind)).Inc()
		s.eventf(false, ReasonJobCreated, fmt.Sprintf("Created %s Job %s/%s for tag %s", req.Kind, job.Namespace, job.Name, req.Tag))
	}
	// 3. The Secret goes with the Job from now on; with StatusDelay, in the status write, so the
	// Job is the only write before it.
	switch {
	case secret != nil && r.StatusDelay > 0:
		s.owners = append(s.owners, ownerOf(job))
	case secret != nil:
		if err := jobsecret.Own(ctx, r.Client, secret, job); err != nil {
			return err
		}
	}
	s.created = job
	b.Status.ActiveJob = job.Name
	return nil
}

// metadataOf is an empty metadata-only object of a core kind, for cached existence checks.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}
