package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/approvals"
	"github.com/slipway-dev/slipway/internal/manager/audit"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// approvalPoll is how often a deployment waiting for approval looks at its approvals.
const approvalPoll = 2 * time.Second

// connectTimeout bounds planning's reachability check of one cluster.
const connectTimeout = 10 * time.Second

// planning validates a deployment before anything is installed: the operator and its chart,
// every cluster (registered, reachable), the CRD changes against what each cluster stores, and
// the approvals the policy asks for. Approvals are created with the transition to
// WaitingApproval in one transaction, so a replica dying here never asks twice.
func (e *Engine) planning(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	ctx, span := telemetry.Tracer().Start(ctx, telemetry.SpanOperatorValidate)
	defer span.End()
	op, err := e.operatorOf(ctx, d)
	if errors.Is(err, store.ErrNotFound) {
		return e.fail(ctx, d, "planning", "the operator is no longer registered")
	}
	if err != nil {
		return 0, err
	}
	if _, _, err := e.planOf(d, op); err != nil {
		return e.fail(ctx, d, "planning", err.Error())
	}
	ch, err := e.chartOf(ctx, op, d.Version)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return e.fail(ctx, d, "planning", err.Error())
	}
	live, err := e.liveReleases(ctx, op)
	if err != nil {
		return 0, err
	}
	facts := approvals.Facts{Operator: op.Name, Version: d.Version}
	breaking := map[string][]string{}
	var problems []string
	for _, c := range d.Clusters {
		installed := ""
		if r := live[c.ClusterName]; r != nil {
			installed = r.Version
		}
		facts.Targets = append(facts.Targets, approvals.Target{Cluster: c.ClusterName, Environment: c.Environment, Installed: installed})
		names, err := e.checkCluster(ctx, c.ClusterName, ch)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, n := range names {
			breaking[n] = append(breaking[n], c.ClusterName)
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return e.fail(ctx, d, "planning", "clusters not ready for the deployment: "+strings.Join(problems, "; "))
	}
	for name, on := range breaking {
		facts.BreakingCRDs = append(facts.BreakingCRDs, name)
		e.event(ctx, d.ID, "crd.breaking", "", fmt.Sprintf("CRD %s: the new definition breaks the one stored on %s", name, strings.Join(on, ", ")), nil)
	}
	span.SetAttributes(attribute.Int("crds.breaking", len(facts.BreakingCRDs)))
	reqs := e.cfg.Policy.Required(facts)
	if len(reqs) == 0 {
		now := e.now()
		_, err := e.transition(ctx, d, store.DeploymentDeploying, "planned: no approval needed", func(d *store.Deployment) {
			d.StartedAt, d.Stage, d.StageStartedAt = &now, 0, nil
		})
		return 0, err
	}
	return e.askApprovals(ctx, d, reqs)
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
		_, err := tx.DeploymentUpdate(ctx, d.ID, func(cur *store.Deployment) error {
			if cur.ClaimedBy != e.cfg.ReplicaID {
				return errLostClaim
			}
			cur.Status, cur.Reason = store.DeploymentWaitingApproval, reason
			return nil
		})
		if err != nil {
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
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	e.event(ctx, d.ID, "status", "", string(d.Status)+" → WaitingApproval: "+reason, map[string]any{"from": d.Status, "to": store.DeploymentWaitingApproval})
	for _, a := range created {
		e.event(ctx, d.ID, "approval.requested", "", fmt.Sprintf("approval %s (%s, %d × %s): %s", a.ID, a.Kind, a.Required, a.RequiredRole, a.Reason), nil)
	}
	return approvalPoll, nil
}

// waitApproval moves on once every approval is approved, and fails on a rejection or expiry:
// a rejected or expired request is never executed.
func (e *Engine) waitApproval(ctx context.Context, d *store.Deployment) (time.Duration, error) {
	list, err := e.cfg.Store.ApprovalList(ctx, &store.ApprovalListParams{DeploymentID: d.ID, Limit: 100})
	if err != nil {
		return 0, err
	}
	pending := 0
	for _, a := range list {
		switch a.Status {
		case store.ApprovalRejected:
			by, comment := "", ""
			for _, dec := range a.Decisions {
				if !dec.Approve {
					by, comment = dec.Actor, dec.Comment
				}
			}
			return e.fail(ctx, d, "approval", fmt.Sprintf("approval %s (%s) rejected by %s: %s", a.ID, a.Kind, by, comment))
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
	_, err = e.transition(ctx, d, store.DeploymentDeploying, fmt.Sprintf("approved (%d approval(s))", len(list)), func(d *store.Deployment) {
		d.StartedAt, d.Stage, d.StageStartedAt = &now, 0, nil
	})
	return 0, err
}

// checkCluster checks one target cluster is reachable (span cluster.connect) and compares the
// chart's CRDs with those it stores; it returns the names of the CRDs whose change breaks.
func (e *Engine) checkCluster(ctx context.Context, name string, ch *fetched) ([]string, error) {
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
	var breaking []string
	for _, def := range ch.defs {
		cur, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, def.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster %s: reading CRD %s: %v", name, def.Name, err)
		}
		rep, err := crds.Compare(cur, def)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: comparing CRD %s: %v", name, def.Name, err)
		}
		if rep.Breaking() {
			breaking = append(breaking, def.Name)
		}
	}
	return breaking, nil
}
