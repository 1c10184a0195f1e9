package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/words"
)

// approvalPoll is how often a deployment waiting for approval looks at its approvals.
const approvalPoll = 2 * time.Second

// connectTimeout bounds planning's reachability check of one cluster.
const connectTimeout = 10 * time.Second

// planning validates a deployment before anything is installed: the operator and its chart,
// every cluster (registered, not Unhealthy by its stored health check, reachable), the CRD
// changes against what each cluster stores, BlueGreen's blue (the operator runs on every
// target, in blueGreenConfig.blueNamespace when given), and the approvals the policy asks for.
// A breaking CRD change that was approved through POST /api/v1/crds/{name}/approve (exactly
// that change, from digest to digest, on every cluster it breaks) asks no breakingCRD
// approval. Approvals are created with the transition to WaitingApproval in one transaction,
// so a replica dying here never asks twice.
func (e *Engine) planning(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	// The design's trace has cluster.connect beside operator.validate, both children of
	// operator.deploy.
	deploySpan := trace.SpanFromContext(ctx)
	ctx, span := telemetry.Tracer().Start(ctx, telemetry.SpanOperatorValidate)
	defer span.End()
	op, err := e.operatorOf(ctx, d)
	if errors.Is(err, store.ErrNotFound) {
		return e.fail(ctx, d, "planning", "the operator is no longer registered")
	}
	if err != nil {
		return 0, err
	}
	plan, spec, err := strategy.PlanOf(d, e.planOptions(op))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return e.fail(ctx, d, "planning", err.Error())
	}
	a, err := e.assess(ctx, deploySpan, d, op, plan, spec)
	if err != nil {
		return 0, err
	}
	if a.failure != "" {
		span.SetStatus(codes.Error, a.failure)
		return e.fail(ctx, d, "planning", a.failure)
	}
	if err := e.recordMigrationNotes(ctx, d, op, a.chart, a.facts.Targets); err != nil {
		return 0, err
	}
	if len(a.requirements) == 0 {
		now := e.now()
		_, err := e.transition(ctx, d, store.DeploymentDeploying, "planned: no approval needed", func(d *store.Deployment) {
			d.StartedAt, d.Stage, d.StageStartedAt = &now, 0, nil
		})
		return 0, err
	}
	return e.askApprovals(ctx, d, a.requirements)
}

// assessment is what planning finds before it writes anything (assess).
type assessment struct {
	plan  *strategy.Plan
	chart *fetched
	// failure is why planning fails the deployment ("" when it goes on to its approvals).
	failure string
	// problems are the clusters planning refuses, and why, by name.
	problems map[string]string
	// crds compares each of the chart's CRDs with the definition each cluster stores, by cluster.
	crds map[string][]crdCheck
	// approvedCRDs are the CRDs whose breaking change was approved through /crds/{name}/approve.
	approvedCRDs []string
	facts        approvals.Facts
	// requirements are the approvals the policy asks for.
	requirements []approvals.Requirement
}

// assess is planning without its writes: the plan, the chart, every cluster, the CRD changes,
// BlueGreen's blue and the approvals, for d planned as plan from spec. planning acts on it;
// DryRun answers it (the events it records are collected there, not stored). deploySpan is the
// parent of cluster.connect.
func (e *Engine) assess(ctx context.Context, deploySpan trace.Span, d *store.Deployment, op *store.Operator, plan *strategy.Plan, spec *request.Spec) (*assessment, error) {
	a := &assessment{plan: plan, problems: map[string]string{}, crds: map[string][]crdCheck{}}
	ch, err := e.chartOf(ctx, op, d.Version)
	if err != nil {
		a.failure = err.Error()
		return a, nil
	}
	a.chart = ch
	live, err := e.liveReleases(ctx, op)
	if err != nil {
		return nil, err
	}
	facts := approvals.Facts{Operator: op.Name, Version: d.Version}
	breaking := map[string][]crdChange{}
	var problems, blue []string
	for _, c := range d.Clusters {
		installed := ""
		if r := live[c.ClusterName]; r != nil {
			installed = r.Version
		}
		facts.Targets = append(facts.Targets, approvals.Target{Cluster: c.ClusterName, Environment: c.Environment, Installed: installed})
		if msg, err := e.storedHealth(ctx, c.ClusterName); err != nil {
			return nil, err
		} else if msg != "" {
			problems = append(problems, msg)
			a.problems[c.ClusterName] = msg
			continue
		}
		checks, err := e.checkCluster(trace.ContextWithSpan(ctx, deploySpan), c.ClusterName, ch)
		if err != nil {
			problems = append(problems, err.Error())
			a.problems[c.ClusterName] = err.Error()
			continue
		}
		a.crds[c.ClusterName] = checks
		for _, chk := range checks {
			if chk.breaking() {
				breaking[chk.Name] = append(breaking[chk.Name], e.changeOf(ctx, op, ch, chk.Name, c.ClusterName, installed))
			}
		}
		dropped, err := e.droppedOn(ctx, d, op, ch, c.ClusterName, installed)
		if err != nil {
			problems = append(problems, err.Error())
			a.problems[c.ClusterName] = err.Error()
			continue
		}
		for n, change := range dropped {
			breaking[n] = append(breaking[n], change)
		}
		if plan.Strategy == api.StrategyBlueGreen {
			if msg := e.blueProblem(ctx, op, spec, c, live[c.ClusterName]); msg != "" {
				blue = append(blue, msg)
				a.problems[c.ClusterName] = msg
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		a.failure = "clusters not ready for the deployment: " + strings.Join(problems, "; ")
		return a, nil
	}
	if len(blue) > 0 {
		sort.Strings(blue)
		a.failure = "BlueGreen has no blue to switch from: " + strings.Join(blue, "; ")
		return a, nil
	}
	names := make([]string, 0, len(breaking))
	for name := range breaking {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		on := e.approvalGated(ctx, d, name, breaking[name])
		if len(on) == 0 {
			continue
		}
		approved, err := e.crdApproved(ctx, d, name, on)
		if err != nil {
			return nil, err
		}
		if approved {
			a.approvedCRDs = append(a.approvedCRDs, name)
			continue
		}
		facts.BreakingCRDs = append(facts.BreakingCRDs, name)
		clusters := make([]string, 0, len(on))
		for _, ch := range on {
			clusters = append(clusters, ch.Cluster)
		}
		e.event(ctx, d.ID, "crd.breaking", "", fmt.Sprintf("CRD %s: the new definition breaks the one stored on %s", name, strings.Join(clusters, ", ")), nil)
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("crds.breaking", len(facts.BreakingCRDs)))
	a.facts, a.requirements = facts, e.cfg.Policy.Required(facts)
	return a, nil
}

// storedHealth is why a cluster must not be deployed to by its registered health: "" unless the
// clusters' health check (the health loop, or GET /clusters/{name}/health?refresh=true) last
// found it Unhealthy. Planning does not wait for it to recover: the deployment fails at once,
// naming the stored reason, and is submitted again once the cluster is Healthy.
func (e *Engine) storedHealth(ctx context.Context, name string) (string, error) {
	cl, err := e.cfg.Store.ClusterGetByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Sprintf("cluster %s is no longer registered", name), nil
	}
	if err != nil {
		return "", err
	}
	if cl.Health != store.HealthUnhealthy {
		return "", nil
	}
	when := "at an unknown time"
	if cl.HealthCheckedAt != nil {
		when = "at " + cl.HealthCheckedAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("cluster %s is Unhealthy (checked %s): %s; once it is fixed and its health check passes (GET /api/v1/clusters/%s/health?refresh=true), deploy again",
		name, when, cl.HealthReason, name), nil
}

// blueProblem is why BlueGreen cannot switch from blue on cluster c, or "": the operator must
// run there (a live release the manager deployed, whose Helm release is deployed in the
// cluster), in blueGreenConfig.blueNamespace when the request gives it, and where the request
// recorded blue.
func (e *Engine) blueProblem(ctx context.Context, op *store.Operator, spec *request.Spec, c *store.DeploymentCluster, r *store.LiveRelease) string {
	if r == nil {
		return fmt.Sprintf("%s is not installed on cluster %s: install it first with a Direct deployment, then switch versions with BlueGreen", op.Name, c.ClusterName)
	}
	if want := spec.BlueGreen.BlueNamespace; want != "" && r.Namespace != want {
		return fmt.Sprintf("on cluster %s %s runs in namespace %s (release %s), not in blueGreenConfig.blueNamespace %q: give the namespace it runs in, or leave blueNamespace out",
			c.ClusterName, op.Name, r.Namespace, r.Release, want)
	}
	if r.Namespace != c.BlueNamespace || r.Release != c.BlueRelease {
		return fmt.Sprintf("on cluster %s %s now runs as %s/%s, not %s/%s as when the deployment was requested: request it again",
			c.ClusterName, op.Name, r.Namespace, r.Release, c.BlueNamespace, c.BlueRelease)
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, c.ClusterName)
	if err != nil {
		return fmt.Sprintf("cluster %s: %v", c.ClusterName, err)
	}
	rel, err := install.Status(ctx, cfg, c.BlueRelease, c.BlueNamespace)
	switch {
	case isNotFound(err):
		return fmt.Sprintf("%s is not installed on cluster %s (no Helm release %s in namespace %s): install it first with a Direct deployment, then switch versions with BlueGreen",
			op.Name, c.ClusterName, c.BlueRelease, c.BlueNamespace)
	case err != nil:
		return fmt.Sprintf("cluster %s: reading blue's release %s/%s: %v", c.ClusterName, c.BlueNamespace, c.BlueRelease, err)
	case rel.Status != "deployed":
		return fmt.Sprintf("on cluster %s blue's release %s/%s is %s, not deployed: fix or redeploy it with a Direct deployment first",
			c.ClusterName, c.BlueNamespace, c.BlueRelease, rel.Status)
	}
	return ""
}

// crdChange is a breaking CRD change on one cluster: from the definition of the version the
// cluster runs (From, "" when unknown) to the chart's (To), as stored revision digests.
type crdChange struct{ Cluster, From, To string }

// changeOf names the change of CRD name on cluster: the digest of the definition the installed
// version ships (the revision the cluster stores when the manager installed it; from the schema
// history by version, or the version's chart: shippedCRDs) and of the new chart's. A digest
// that cannot be had is "" and matches no approval.
func (e *Engine) changeOf(ctx context.Context, op *store.Operator, ch *fetched, name, cluster, installed string) crdChange {
	out := crdChange{Cluster: cluster, To: digestOf(ch, name)}
	if installed == "" {
		return out
	}
	was, err := e.shippedCRDs(ctx, op, installed)
	if err != nil {
		e.log.WarnContext(ctx, "engine: What the installed version ships could not be read: its CRD change counts as not approved",
			"installedVersion", installed, telemetry.KeyCluster, cluster, "error", err)
		return out
	}
	out.From = was[name]
	return out
}

func digestOf(ch *fetched, name string) string {
	for _, def := range ch.defs {
		if def.Name == name {
			if d, err := crds.Digest(def); err == nil {
				return d
			}
		}
	}
	return ""
}

// crdApproved reports whether every change of CRD name in on was approved through
// POST /api/v1/crds/{name}/approve, and records a crd.approved event naming the approvers.
func (e *Engine) crdApproved(ctx context.Context, d *store.Deployment, name string, on []crdChange) (bool, error) {
	list, err := e.cfg.Store.CRDApprovalList(ctx, name)
	if err != nil {
		return false, fmt.Errorf("reading the approvals of CRD %s: %w", name, err)
	}
	var who []string
	for _, c := range on {
		a := crds.FindApproval(list, c.From, c.To)
		if a == nil {
			return false, nil
		}
		who = append(who, fmt.Sprintf("%s: approved by %s on %s (%s)", c.Cluster, a.ApprovedBy, a.CreatedAt.UTC().Format(time.RFC3339), a.Reason))
	}
	e.event(ctx, d.ID, "crd.approved", "", fmt.Sprintf("CRD %s: the breaking change was approved, no breakingCRD approval needed: %s", name, strings.Join(who, "; ")),
		map[string]any{"from": on[0].From, "to": on[0].To})
	return true, nil
}

// askApprovals creates the approvals and moves the deployment to WaitingApproval, atomically.
func (e *Engine) askApprovals(ctx context.Context, d *store.Deployment, reqs []approvals.Requirement) (time.Duration, error) {
	kinds := make([]string, 0, len(reqs))
	for _, r := range reqs {
		kinds = append(kinds, r.Kind)
	}
	reason := "waiting for approval: " + strings.Join(kinds, ", ")
	expires := e.now().Add(e.cfg.ApprovalTTL)
	var created []*store.Approval
	err := store.WithTx(ctx, e.cfg.Store, func(ctx context.Context, tx store.Tx) error {
		created = created[:0]
		waiting, err := tx.DeploymentUpdate(ctx, d.ID, func(cur *store.Deployment) error {
			if cur.ClaimedBy != e.cfg.ReplicaID {
				return errLostClaim
			}
			cur.Status, cur.Reason = store.DeploymentWaitingApproval, reason
			return nil
		})
		if err != nil {
			return err
		}
		// The status's event commits with it (updateNotifying says why), each approval's after it.
		if _, err := tx.DeploymentEventInsert(ctx, e.statusEvent(d.ID, d.Status, store.DeploymentWaitingApproval, reason)); err != nil {
			return err
		}
		for _, r := range reqs {
			a, err := tx.ApprovalCreate(ctx, r.Approval(d.ID, d.RequestedBy, expires))
			if err != nil {
				return err
			}
			created = append(created, a)
			// The approval's whole history is in the audit log: its request here, the decisions
			// at the API, its expiry in the loop.
			if _, err := tx.AuditInsert(ctx, &store.AuditInsertParams{
				At: e.now(), Actor: d.RequestedBy, Action: "approval.request", TargetKind: "approval", TargetName: a.ID,
				Result: audit.Success, RequestID: d.RequestID,
				Details: fmt.Sprintf("deployment %s: %s (%d × %s): %s", d.ID, a.Kind, a.Required, a.RequiredRole, a.Reason),
			}); err != nil {
				return err
			}
			if _, err := tx.DeploymentEventInsert(ctx, e.newEvent(d.ID, "approval.requested", "",
				fmt.Sprintf("approval %s (%s, %d × %s): %s", a.ID, a.Kind, a.Required, a.RequiredRole, a.Reason), nil)); err != nil {
				return err
			}
		}
		return e.notifyStatus(ctx, tx, d.Status, waiting)
	})
	if err != nil {
		return 0, err
	}
	e.log.InfoContext(logContext(ctx, d), "engine: Deployment "+string(store.DeploymentWaitingApproval), "reason", reason, "approvals", len(created))
	return approvalPoll, nil
}

// waitApproval moves on once every approval is approved, and fails on a rejection or expiry:
// a rejected or expired request is never executed. The status line of a decision's effect names
// the approver who decided it as userId (askedBy): the rejecter, or whoever gave the last approval.
func (e *Engine) waitApproval(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	list, err := e.cfg.Store.ApprovalList(ctx, &store.ApprovalListParams{DeploymentID: d.ID, Limit: 100})
	if err != nil {
		return 0, err
	}
	pending := 0
	var last store.ApprovalDecision
	for _, a := range list {
		for _, dec := range a.Decisions {
			if dec.Approve && !dec.At.Before(last.At) {
				last = *dec
			}
		}
		switch a.Status {
		case store.ApprovalRejected:
			by, comment := "", ""
			for _, dec := range a.Decisions {
				if !dec.Approve {
					by, comment = dec.Actor, dec.Comment
				}
			}
			return e.fail(askedBy(ctx, by), d, "approval", fmt.Sprintf("approval %s (%s) rejected by %s: %s", a.ID, a.Kind, by, comment))
		case store.ApprovalExpired:
			return e.fail(ctx, d, "approval", fmt.Sprintf("approval %s (%s) expired on %s undecided", a.ID, a.Kind, a.ExpiresAt.Format(time.RFC3339)))
		case store.ApprovalPending:
			pending++
		}
	}
	if pending > 0 || len(list) == 0 {
		return approvalPoll, nil // a decision (on any replica) is seen within approvalPoll
	}
	now := e.now()
	_, err = e.transition(askedBy(ctx, last.Actor), d, store.DeploymentDeploying, fmt.Sprintf("approved (%s)", words.Count(len(list), "approval")), func(d *store.Deployment) {
		d.StartedAt, d.Stage, d.StageStartedAt = &now, 0, nil
	})
	return 0, err
}

// crdCheck is one of the chart's CRDs compared with the definition a cluster stores: Report is
// nil when the cluster has none (the chart installs it).
type crdCheck struct {
	Name   string
	Report *crds.Report
}

func (c crdCheck) breaking() bool { return c.Report != nil && c.Report.Breaking() }

// checkCluster checks one target cluster is reachable (span cluster.connect) and compares each
// of the chart's CRDs with the one it stores.
func (e *Engine) checkCluster(ctx context.Context, name string, ch *fetched) ([]crdCheck, error) {
	ctx, span := telemetry.Tracer().Start(ctx, telemetry.SpanClusterConnect)
	defer span.End()
	span.SetAttributes(attribute.String("cluster", name))
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cfg, err := e.cfg.Clusters.RESTConfig(ctx, name)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("cluster %s: %v", name, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %v", name, err)
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("cluster %s unreachable: %v", name, err)
	}
	if len(ch.defs) == 0 {
		return nil, nil
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %v", name, err)
	}
	var checks []crdCheck
	for _, def := range ch.defs {
		cur, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, def.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			checks = append(checks, crdCheck{Name: def.Name})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: reading CRD %s: %v", name, def.Name, err)
		}
		rep, err := crds.Compare(cur, def)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: comparing CRD %s: %v", name, def.Name, err)
		}
		checks = append(checks, crdCheck{Name: def.Name, Report: rep})
	}
	return checks, nil
}
