package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

// The mail shows the deployment's migration notes, each under its CRD with its link and its
// markdown indented; without notes the section is absent.
func TestPendingMessage_MigrationNotes(t *testing.T) {
	p := Pending{ApprovalID: "ap-1", DeploymentID: "dep-1", Kind: "breakingCRD", RequiredRole: "Admin", Required: 1,
		Reason: "breaking changes to the CRDs widgets.example.com of widgets 2.0.0", Operator: "widgets", Version: "2.0.0",
		RequestedBy: "otto", ExpiresAt: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)}
	m, err := PendingMessage(p, "https://s.example.com", []string{"ada@example.com"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.Body, "Migration notes") {
		t.Fatalf("a mail without notes has the section:\n%s", m.Body)
	}
	p.MigrationNotes = []*store.DeploymentMigrationNote{
		{CRDName: "widgets.example.com", Version: "2.0.0", Digest: "sha256:aa",
			Note: store.MigrationNote{Text: "Recolour **blue** widgets:\n\n    kubectl get widgets -A\n", URL: "https://docs.example.com/widgets/v2"}},
		{CRDName: "gadgets.example.com", Version: "1.5.0", Digest: "sha256:bb", Note: store.MigrationNote{URL: "https://docs.example.com/gadgets"}},
	}
	m, err = PendingMessage(p, "https://s.example.com", []string{"ada@example.com"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := `Migration notes for the CRDs this version changes:

* widgets.example.com as 2.0.0 ships it (sha256:aa):
  Guide: https://docs.example.com/widgets/v2
    Recolour **blue** widgets:

        kubectl get widgets -A

* gadgets.example.com as 1.5.0 ships it (sha256:bb):
  Guide: https://docs.example.com/gadgets

Approve: https://s.example.com/api/v1/approvals/ap-1/approve`
	if !strings.Contains(m.Body, want) {
		t.Fatalf("mail body lacks the notes as\n%s\n--- body:\n%s", want, m.Body)
	}
}
