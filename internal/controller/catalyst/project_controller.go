package catalyst

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/operator/notes"
	"github.com/slipway-dev/slipway/internal/operator/patch"
	"github.com/slipway-dev/slipway/internal/registry"
	"github.com/slipway-dev/slipway/internal/registry/access"
)

const indexProjectSecret = "catalyst.catalyst.dev/secret"

// ProjectReconciler validates Projects (the repository answers with the credentials given, the
// branch exists, the deployment path is there at its head; the Secrets they name exist) and
// counts their Environments.
type ProjectReconciler struct {
	client.Client
	// APIReader reads Secrets (not cached).
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock

	GitTimeout time.Duration
	// ValidationInterval is how often the branch head is checked (±10 %).
	ValidationInterval time.Duration
	// ResolveBranch and Fetch reach the repository (gitsource's by default).
	ResolveBranch func(context.Context, gitsource.Options) (string, error)
	Fetch         func(context.Context, gitsource.Options) (*gitsource.Snapshot, error)

	once     sync.Once
	attempts attemptTracker
}

func (r *ProjectReconciler) defaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.GitTimeout == 0 {
		r.GitTimeout = DefaultGitTimeout
	}
	if r.ValidationInterval == 0 {
		r.ValidationInterval = DefaultValidationInterval
	}
	if r.ResolveBranch == nil {
		r.ResolveBranch = gitsource.ResolveBranch
	}
	if r.Fetch == nil {
		r.Fetch = gitsource.Fetch
	}
}

// indexedManagers holds the field indexers indexProjectSecrets has registered with: both
// reconcilers need the index, each may be set up alone, and an indexer takes an index once.
var indexedManagers sync.Map

// indexProjectSecrets indexes Projects by the names of the Secrets they name, in their namespace.
func indexProjectSecrets(ctx context.Context, mgr manager.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if _, done := indexedManagers.LoadOrStore(indexer, true); done {
		return nil
	}
	return indexer.IndexField(ctx, &catalystv1alpha1.Project{}, indexProjectSecret, func(o client.Object) []string {
		p, ok := o.(*catalystv1alpha1.Project)
		if !ok {
			return nil
		}
		var names []string
		for _, ref := range projectSecretRefs(p) {
			names = append(names, ref.name)
		}
		return names
	})
}

// projectsNamingSecret returns the Projects in the Secret's namespace that name it.
func projectsNamingSecret(ctx context.Context, c client.Reader, secret client.Object) []catalystv1alpha1.Project {
	var list catalystv1alpha1.ProjectList
	if err := c.List(ctx, &list, client.InNamespace(secret.GetNamespace()), client.MatchingFields{indexProjectSecret: secret.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the Projects naming a Secret", "secret", klog.KObj(secret))
		return nil
	}
	return list.Items
}

// secretRef is one Secret a Project names, and where.
type secretRef struct {
	name, field string
}

func projectSecretRefs(p *catalystv1alpha1.Project) []secretRef {
	var out []secretRef
	if ref := p.Spec.Source.SecretRef; ref != nil {
		out = append(out, secretRef{ref.Name, "spec.source.secretRef"})
	}
	if reg := p.Spec.Registry; reg != nil && reg.SecretRef != nil {
		out = append(out, secretRef{reg.SecretRef.Name, "spec.registry.secretRef"})
	}
	if reg := p.Spec.Registry; reg != nil && reg.PullSecretRef != nil {
		out = append(out, secretRef{reg.PullSecretRef.Name, "spec.registry.pullSecretRef"})
	}
	for _, ref := range p.Spec.SecretRefs {
		out = append(out, secretRef{ref.Name, "spec.secretRefs"})
	}
	return out
}

// SetupWithManager registers the controller: Projects (spec changes), the Environments that
// refer to them (created or deleted: the count), and the Secrets they name.
func (r *ProjectReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.once.Do(r.defaults)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := indexProjectSecrets(ctx, mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("catalyst-project").
		For(&catalystv1alpha1.Project{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&catalystv1alpha1.Environment{}, handler.EnqueueRequestsFromMapFunc(environmentToProject),
			builder.WithPredicates(environmentCounted)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToProjects), builder.OnlyMetadata).
		WithOptions(opts).
		Complete(r)
}

// environmentCounted passes the events that change a Project's count: creation, deletion and
// the start of a deletion.
var environmentCounted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return (e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	},
}

func environmentToProject(_ context.Context, o client.Object) []reconcile.Request {
	env, ok := o.(*catalystv1alpha1.Environment)
	if !ok {
		return nil
	}
	ns := projectNamespace(env)
	if ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: env.Spec.ProjectRef.Name}}}
}

func (r *ProjectReconciler) secretToProjects(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, p := range projectsNamingSecret(ctx, r.Client, o) {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return out
}

// projectScope carries one Project reconcile's facts to computeProjectStatus.
type projectScope struct {
	project *catalystv1alpha1.Project
	now     time.Time

	secretsErr string // a named Secret is missing or unusable
	// secretsField is the spec field naming that Secret.
	secretsField string
	// validated is set when the source was checked in this reconcile.
	validated  bool
	source     *outcome
	stalled    bool
	head       string
	envCount   int32
	countKnown bool
	next       time.Duration
	events     notes.Notes
}

func (s *projectScope) requeue(d time.Duration) {
	if d > 0 && (s.next == 0 || d < s.next) {
		s.next = d
	}
}

// Reconcile checks the Secrets, validates the source when due, counts the Environments, and
// writes the status once (nothing when nothing changed).
func (r *ProjectReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	r.once.Do(r.defaults)
	start := time.Now()
	p := &catalystv1alpha1.Project{}
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.attempts.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	helper := patch.NewHelper(p, r.Client)
	s := &projectScope{project: p, now: r.Clock.Now()}
	defer func() {
		r.computeProjectStatus(s)
		if err := helper.Patch(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
		s.events.Emit(ctx, r.Recorder, s.project, "Validate")
		reconcileDuration.WithLabelValues("Project").Observe(time.Since(start).Seconds())
		if retErr == nil {
			result = ctrl.Result{RequeueAfter: s.next}
		}
	}()
	if err := r.checkSecrets(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.validateSource(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.countEnvironments(ctx, s)
}

// checkSecrets makes sure every Secret the Project names exists, and that the git and registry
// credentials can be read from theirs.
func (r *ProjectReconciler) checkSecrets(ctx context.Context, s *projectScope) error {
	p := s.project
	for _, ref := range projectSecretRefs(p) {
		secret, err := access.ReadSecret(ctx, r.APIReader, p.Namespace, ref.name, ref.field)
		if errors.Is(err, errSecret) {
			s.secretsErr, s.secretsField = err.Error()+"; create it or fix the reference", ref.field
			return nil
		}
		if err != nil {
			return err
		}
		switch ref.field {
		case "spec.source.secretRef":
			if _, err := gitsource.CredentialsFromSecretData(secret.Data); err != nil {
				s.secretsErr, s.secretsField = fmt.Sprintf("Secret %s/%s named in spec.source.secretRef: %v", p.Namespace, ref.name, err), ref.field
				return nil
			}
		case "spec.registry.secretRef", "spec.registry.pullSecretRef":
			if _, err := registry.CredentialsFromSecret(secret, access.Host(p.Spec.Registry.Repository)); err != nil {
				s.secretsErr, s.secretsField = fmt.Sprintf("%s: %v", ref.field, err), ref.field
				return nil
			}
		}
	}
	return nil
}

// validateSource checks the repository when the spec changed, the interval passed, or an earlier
// failure's backoff ended: the branch head (refs only), and the deployment path at that head when
// the head moved. Failures of the current generation are not retried on every event.
func (r *ProjectReconciler) validateSource(ctx context.Context, s *projectScope) error {
	p := s.project
	st := &p.Status
	key := client.ObjectKeyFromObject(p)
	if s.secretsField == "spec.source.secretRef" {
		// The repository cannot be asked without its credentials.
		return nil
	}
	if wait, due := r.validationDue(s); !due {
		s.requeue(wait)
		return nil
	}
	creds, err := gitCredentials(ctx, r.APIReader, p)
	if err != nil && !errors.Is(err, errSecret) {
		return err
	}
	s.validated = true
	o := gitsource.Options{URL: p.Spec.Source.RepositoryURL, Branch: p.Spec.Source.Branch, Credentials: creds, Timeout: r.GitTimeout}
	if err == nil {
		var head string
		head, err = r.ResolveBranch(ctx, o)
		if err == nil {
			s.head = head
			sameAsBefore := head == st.SourceCommit && st.ObservedGeneration == p.Generation
			if !sameAsBefore {
				o.Commit = head
				var snap *gitsource.Snapshot
				if snap, err = r.Fetch(ctx, o); err == nil {
					err = checkPath(snap, p)
				}
			}
		}
	}
	if err == nil {
		projectValidations.WithLabelValues("ready").Inc()
		r.attempts.forget(key)
		s.source = &outcome{ok: true, reason: catalystv1alpha1.SucceededReason,
			message: fmt.Sprintf("Branch %s of %s is at %s and has %s %q", p.Spec.Source.Branch, p.Spec.Source.RepositoryURL,
				shortSHA(s.head), pathKind(p.Spec.Deployment.Type), p.Spec.Deployment.Path)}
		s.requeue(jitter(r.ValidationInterval))
		return nil
	}
	projectValidations.WithLabelValues("failed").Inc()
	reason, stalled := sourceReason(err)
	n := r.attempts.failed(key, p.Generation, s.now)
	wait := r.ValidationInterval
	if !stalled {
		wait = backoff(n, retryBase, r.ValidationInterval)
	}
	wait = jitter(wait)
	r.attempts.schedule(key, s.now.Add(wait))
	s.requeue(wait)
	s.stalled = stalled
	s.source = &outcome{reason: reason, message: fmt.Sprintf("%v%s (checked again in %s)", err, sourceHint(reason), wait.Round(time.Second))}
	return nil
}

// validationDue reports whether the source must be checked now, or how long until it is.
func (r *ProjectReconciler) validationDue(s *projectScope) (time.Duration, bool) {
	p := s.project
	key := client.ObjectKeyFromObject(p)
	if next, gen, ok := r.attempts.next(key); ok && gen == p.Generation {
		if s.now.Before(next) {
			return next.Sub(s.now), false
		}
		return 0, true
	}
	if p.Status.ObservedGeneration != p.Generation || p.Status.LastValidatedTime == nil {
		return 0, true
	}
	due := p.Status.LastValidatedTime.Add(r.ValidationInterval)
	if s.now.Before(due) {
		return due.Sub(s.now), false
	}
	return 0, true
}

// checkPath makes sure the deployment path is at the commit: a directory for a chart or a
// kustomization, a directory or a file for manifests.
func checkPath(snap *gitsource.Snapshot, p *catalystv1alpha1.Project) error {
	path := p.Spec.Deployment.Path
	if p.Spec.Deployment.Type == catalystv1alpha1.DeploymentTypeManifest {
		_, err := snap.Stat(path)
		return err
	}
	return snap.RequireDir(path)
}

func pathKind(t catalystv1alpha1.DeploymentType) string {
	switch t {
	case catalystv1alpha1.DeploymentTypeHelm:
		return "the chart"
	case catalystv1alpha1.DeploymentTypeKustomize:
		return "the kustomization"
	}
	return "the manifests"
}

// countEnvironments counts the Environments that refer to the Project (deleting ones aside).
func (r *ProjectReconciler) countEnvironments(ctx context.Context, s *projectScope) error {
	var list catalystv1alpha1.EnvironmentList
	key := s.project.Namespace + "/" + s.project.Name
	if err := r.List(ctx, &list, client.MatchingFields{indexProject: key}); err != nil {
		return fmt.Errorf("counting Environments: %w", err)
	}
	n := 0
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			n++
		}
	}
	s.envCount, s.countKnown = int32(n), true
	return nil
}

// attemptTracker remembers, per Project, when its source may be checked again after a failed
// validation of a generation.
type attemptTracker struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*attempt
}

type attempt struct {
	generation int64
	failures   int
	next       time.Time
}

func (t *attemptTracker) failed(key types.NamespacedName, gen int64, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[types.NamespacedName]*attempt{}
	}
	a, ok := t.m[key]
	if !ok || a.generation != gen {
		a = &attempt{generation: gen}
		t.m[key] = a
	}
	a.failures++
	a.next = now
	return a.failures
}

func (t *attemptTracker) schedule(key types.NamespacedName, next time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.m[key]; ok {
		a.next = next
	}
}

func (t *attemptTracker) next(key types.NamespacedName) (time.Time, int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.m[key]
	if !ok {
		return time.Time{}, 0, false
	}
	return a.next, a.generation, true
}

func (t *attemptTracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, key)
}
