//go:build e2e

package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/notify/smtptest"
)

// startSMTP is the approval mail's SMTP server (STARTTLS, AUTH PLAIN, mail only after AUTH),
// and the file of its CA for --smtp-ca-file.
func startSMTP(t *testing.T) (*smtptest.Server, string) {
	t.Helper()
	caFile := filepath.Join(t.TempDir(), "smtp-ca.pem")
	if err := os.WriteFile(caFile, smtptest.CAPEM(t), 0o600); err != nil {
		t.Fatal(err)
	}
	return smtptest.Start(t, smtptest.Options{}), caFile
}

// awaitApprovalMail waits for the mail of the approval of deployment id, and checks how it
// came: over STARTTLS, authenticated.
func awaitApprovalMail(t *testing.T, s *smtptest.Server, deploymentID string) smtptest.Message {
	t.Helper()
	m := s.Await(t, "approval mail for deployment "+deploymentID, func(m smtptest.Message) bool {
		return m.Header.Get("X-Slipway-Deployment-Id") == deploymentID
	})
	if !m.TLS || m.User != smtptest.User {
		t.Fatalf("mail sent with TLS %v as %q, want STARTTLS as %s", m.TLS, m.User, smtptest.User)
	}
	return m
}

// pendingApproval is the one pending approval of deployment id (GET /api/v1/approvals).
func pendingApproval(t *testing.T, p *proc, id string) api.DeploymentApproval {
	t.Helper()
	var list api.ApprovalList
	if err := json.Unmarshal(p.must("GET", "/api/v1/approvals?status=pending&deploymentId="+id, p.d.admin(), nil, http.StatusOK).body, &list); err != nil {
		t.Fatal(err)
	}
	var mine []api.DeploymentApproval
	for _, a := range list.Items {
		if a.DeploymentID == id && a.Status == "pending" {
			mine = append(mine, a)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("deployment %s has %d pending approvals, want 1: %+v", id, len(mine), list.Items)
	}
	return mine[0]
}

// TestApprovalMail_ThroughTheBinary: a manager serving with the SMTP flags mails every pending
// approval of a Production deployment to a real SMTP server (STARTTLS, AUTH PLAIN, the server's
// CA from --smtp-ca-file) within 30 s, with the approve link under --public-url and the
// approval's id in X-Slipway-Approval-Id. Approved by a Production owner who did not ask, the
// deployment completes; rejected by another Admin, it fails and nothing is installed.
func TestApprovalMail_ThroughTheBinary(t *testing.T) {
	t.Parallel()
	srv := fleet(t, 2).Servers[1]
	mailSrv, caFile := startSMTP(t)
	d := newDeployment(t, "postgres")
	d.extraEnv = append(d.extraEnv, "SLIPWAY_MANAGER_SMTP_PASSWORD="+smtptest.Password)
	const publicURL = "https://slipway.example.org"
	p := d.serve("--insecure-http", "--smtp-address="+mailSrv.Addr, "--smtp-from=Slipway <slipway@example.org>",
		"--smtp-username="+smtptest.User, "--smtp-ca-file="+caFile, "--public-url="+publicURL,
		"--approval-recipients=Admin=admins@example.org;EnvironmentOwner:Production=prod-owners@example.org",
		"--operator-health-interval=2s")
	registerCluster(t, p, "mail-prod", "Production", srv.Kubeconfig)
	repo := operatorRepo(t).URL
	okOp, noOp := uniqueName("mail-ok"), uniqueName("mail-no")
	registerOperator(t, p, okOp, okOp, repo)
	registerOperator(t, p, noOp, noOp, repo)
	alice := d.admin() // the requester
	owner := d.token("olivia", auth.EnvironmentOwnerOf("Production"))
	carol := d.token("carol", auth.Admin)

	// Approved: the mail, then the approval by a Production owner, then the install.
	posted := time.Now()
	dep := postDeployment(t, p, alice, fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": ["mail-prod"], "strategy": "Direct"}`, okOp))
	waitDeployment(t, p, dep.ID, "WaitingApproval", time.Minute)
	m := awaitApprovalMail(t, mailSrv, dep.ID)
	t.Logf("approval mail received %s after POST /api/v1/deployments", time.Since(posted).Round(time.Millisecond))
	a := pendingApproval(t, p, dep.ID)
	checkApprovalMail(t, m, a, publicURL, "prod-owners@example.org")
	p.must("POST", "/api/v1/approvals/"+a.ID+"/approve", alice, []byte(`{"comment": "mine"}`), http.StatusForbidden)
	p.must("POST", "/api/v1/approvals/"+a.ID+"/approve", owner, []byte(`{"comment": "go"}`), http.StatusOK)
	done := waitDeployment(t, p, dep.ID, "Completed", 3*time.Minute)
	rel, err := install.Status(context.Background(), srv.Config, okOp, okOp)
	if err != nil {
		t.Fatalf("the approved deployment's release: %v", err)
	}
	if rel.ChartVersion != "1.0.0" || rel.Status != "deployed" || done.Clusters[0].HelmRevision != rel.Revision {
		t.Fatalf("the approved deployment's release is %s %s revision %d; the deployment says revision %d",
			rel.ChartVersion, rel.Status, rel.Revision, done.Clusters[0].HelmRevision)
	}

	// Rejected: the mail, the rejection, Failed, nothing installed.
	dep2 := postDeployment(t, p, alice, fmt.Sprintf(`{"operator": %q, "version": "1.0.0", "clusters": ["mail-prod"], "strategy": "Direct"}`, noOp))
	waitDeployment(t, p, dep2.ID, "WaitingApproval", time.Minute)
	m2 := awaitApprovalMail(t, mailSrv, dep2.ID)
	a2 := pendingApproval(t, p, dep2.ID)
	checkApprovalMail(t, m2, a2, publicURL, "prod-owners@example.org")
	p.must("POST", "/api/v1/approvals/"+a2.ID+"/reject", carol, []byte(`{"comment": "not this week"}`), http.StatusOK)
	failed := waitDeployment(t, p, dep2.ID, "Failed", time.Minute)
	if !strings.Contains(failed.Reason, "not this week") && !strings.Contains(failed.Reason, "reject") {
		t.Errorf("the rejected deployment's reason %q names neither the rejection nor its comment", failed.Reason)
	}
	if c := failed.Clusters[0]; c.HelmRevision != 0 || c.InstallAttempts != 0 {
		t.Errorf("the rejected deployment's cluster: revision %d, %d install attempts; want none", c.HelmRevision, c.InstallAttempts)
	}
	// Give a wrongly running engine time to install anyway, then look in the cluster.
	time.Sleep(3 * time.Second)
	_, err = install.Status(context.Background(), srv.Config, noOp, noOp)
	var ie *invalid.Error
	if !errors.As(err, &ie) || ie.Reason != "notFound" {
		t.Fatalf("the rejected deployment's release: %v, want none", err)
	}
	var decided api.DeploymentApproval
	var all api.ApprovalList
	if err := json.Unmarshal(p.must("GET", "/api/v1/approvals?status=all&deploymentId="+dep2.ID, alice, nil, http.StatusOK).body, &all); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(all.Items, func(x api.DeploymentApproval) bool { return x.ID == a2.ID }); i >= 0 {
		decided = all.Items[i]
	}
	if decided.Status != "rejected" || len(decided.Decisions) != 1 || decided.Decisions[0].Actor != "carol" || decided.Decisions[0].Comment != "not this week" {
		t.Fatalf("the rejected approval: %+v", decided)
	}
	if extra, ok := mailSrv.Poll(t); ok {
		t.Errorf("an unexpected mail: %s", extra.Data)
	}
}

// checkApprovalMail checks an approval mail names approval a: its id header, its approve and
// reject links under publicURL, its recipient.
func checkApprovalMail(t *testing.T, m smtptest.Message, a api.DeploymentApproval, publicURL, to string) {
	t.Helper()
	if got := m.Header.Get("X-Slipway-Approval-Id"); got != a.ID {
		t.Errorf("X-Slipway-Approval-Id %q, want %s", got, a.ID)
	}
	for _, link := range []string{publicURL + "/api/v1/approvals/" + a.ID + "/approve", publicURL + "/api/v1/approvals/" + a.ID + "/reject"} {
		if !strings.Contains(m.Body, link) {
			t.Errorf("the mail has no link %s:\n%s", link, m.Body)
		}
	}
	if !slices.Contains(m.To, to) {
		t.Errorf("mailed to %v, want %s among them", m.To, to)
	}
	if a.Kind != "production" || a.RequiredRole != "EnvironmentOwner:Production" {
		t.Errorf("approval kind %s for %s, want production for EnvironmentOwner:Production", a.Kind, a.RequiredRole)
	}
}
