package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

func TestPendingOf(t *testing.T) {
	exp := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	a := &store.Approval{ID: "ap-1", DeploymentID: "dep-1", Kind: "versionUpgrade", RequiredRole: "Admin", Required: 2,
		RequestedBy: "otto", Reason: "why", ExpiresAt: exp}
	d := &store.Deployment{ID: "dep-1", OperatorName: "widgets", Version: "2.0.0", Strategy: "Canary",
		Clusters: []*store.DeploymentCluster{{ClusterName: "dev-1"}, {ClusterName: "prod-1"}}}
	want := Pending{ApprovalID: "ap-1", DeploymentID: "dep-1", Kind: "versionUpgrade", RequiredRole: "Admin", Required: 2,
		Reason: "why", Operator: "widgets", Version: "2.0.0", Strategy: "Canary", Clusters: []string{"dev-1", "prod-1"},
		RequestedBy: "otto", ExpiresAt: exp}
	if diff := cmp.Diff(want, PendingOf(a, d)); diff != "" {
		t.Errorf("PendingOf (-want +got):\n%s", diff)
	}
	if p := PendingOf(a, nil); p.ApprovalID != "ap-1" || p.Operator != "" {
		t.Errorf("PendingOf without a deployment: %+v", p)
	}
}

func TestLinksFor(t *testing.T) {
	p := Pending{ApprovalID: "a b/c", DeploymentID: "dep-1"}
	for base, want := range map[string]URLs{
		"https://s.example.com": {
			Approve: "https://s.example.com/api/v1/approvals/a%20b%2Fc/approve", Reject: "https://s.example.com/api/v1/approvals/a%20b%2Fc/reject",
			Deployment: "https://s.example.com/api/v1/deployments/dep-1"},
		"http://localhost:8080/prefix/": {
			Approve: "http://localhost:8080/prefix/api/v1/approvals/a%20b%2Fc/approve", Reject: "http://localhost:8080/prefix/api/v1/approvals/a%20b%2Fc/reject",
			Deployment: "http://localhost:8080/prefix/api/v1/deployments/dep-1"},
	} {
		got, err := LinksFor(base, p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("LinksFor(%q) (-want +got):\n%s", base, diff)
		}
	}
	for _, bad := range []string{"", "s.example.com", "mailto:a@example.com", "https://"} {
		if _, err := LinksFor(bad, p); err == nil {
			t.Errorf("LinksFor(%q) accepted", bad)
		}
	}
}

func TestPendingMessageWording(t *testing.T) {
	p := Pending{ApprovalID: "ap-1", DeploymentID: "dep-1", Kind: "versionUpgrade", RequiredRole: "Admin", Required: 2,
		Reason: "operator version upgrade of widgets: 1.0.0 → 2.0.0 (major upgrade) on d1", Operator: "widgets",
		Version: "2.0.0", RequestedBy: "otto"}
	m, err := PendingMessage(p, "https://s.example.com", []string{"ada@example.com"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"otto asked to deploy widgets 2.0.0, and it waits for approval.",
		"Who decides:  2 different people with Admin\n",
		"Clusters:     -\n",
		"Approve: https://s.example.com/api/v1/approvals/ap-1/approve",
		"Nobody may approve their own request.",
	} {
		if !strings.Contains(m.Body, want) {
			t.Errorf("the body lacks %q:\n%s", want, m.Body)
		}
	}
	if strings.Contains(m.Body, "Expires:") {
		t.Errorf("an approval without expiry has an Expires line:\n%s", m.Body)
	}
	if m.Subject != "[slipway] Approval needed: widgets 2.0.0 (versionUpgrade) by otto" || m.Headers["X-Slipway-Approval-Id"] != "ap-1" {
		t.Errorf("subject %q headers %v", m.Subject, m.Headers)
	}
}
