package server

import (
	"net/http"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// nwidgets is the CRD of TestMigrationNotes_RefreshAndPatch: Base in 1.0.0, Compatible in 2.0.0,
// Breaking in 3.0.0, Base again in 4.0.0.
const nwidgets = "nwidgets." + charttest.Group

func notedChart(version string, level charttest.Level) charttest.ChartFiles {
	return histChart(version, "nwidgets", "NWidget", level)
}

// TestMigrationNotes_RefreshAndPatch: a migration note given with POST /operators/{name}/refresh
// or with PATCH /operators/{name} is stored on the revision of the CRD that the version it names
// ships, a version the same request found, and GET /crds/{name}, GET /crds/{name}/revisions/{version}
// and validate show it; a note without a version goes to the newest version's revision and
// replaces its note; a note the refresh cannot place is refused and the refresh stores nothing.
func TestMigrationNotes_RefreshAndPatch(t *testing.T) {
	forEngine(t, testMigrationNotesRefreshAndPatch)
}

func testMigrationNotesRefreshAndPatch(t *testing.T, engine string) {
	b := setup(t, engine)
	olga := b.token("olga", auth.Operator)
	repo := charttest.ServeRepository(t, notedChart("1.0.0", charttest.Base))
	expect(t, "register", b.do("POST", "/api/v1/operators", olga, api.OperatorRequest{Name: "noted", Namespace: "noted-system",
		Chart: api.ChartRef{Repository: repo.URL, Name: "hist-operator"}}), http.StatusCreated)

	// At refresh: 2.0.0 published, its note given with the refresh that finds it.
	repo.Add(t, notedChart("2.0.0", charttest.Compatible))
	yellow := api.MigrationNote{Text: "Yellow widgets are allowed from **2.0.0**; nothing to migrate."}
	res := refreshOK(t, b, olga, "noted", api.RefreshRequest{MigrationNotes: []api.MigrationNoteRequest{
		{CRD: nwidgets, Version: "2.0.0", Text: yellow.Text}}})
	if !slices.Equal(res.Added, []string{"2.0.0"}) {
		t.Fatalf("refresh with a note for 2.0.0: %+v", res)
	}
	crd := getNotedCRD(t, b, 2)
	if crd.Revisions[0].MigrationNote != nil || !notedRevision(crd.Revisions[1], "2.0.0", yellow) {
		t.Fatalf("after the refresh: revisions %+v", crd.Revisions)
	}
	checkNotedValidate(t, b, "2.0.0", yellow, []api.RevisionNote{{CRD: nwidgets, Version: "2.0.0", Digest: crd.Revisions[1].Digest, Note: yellow}})

	// At PATCH: 3.0.0 published; a PATCH giving only notes reads the source, stores 3.0.0 and
	// puts the note on its revision.
	repo.Add(t, notedChart("3.0.0", charttest.Breaking))
	guide := api.MigrationNote{URL: "https://docs.example.com/nwidgets/3.0.0"}
	r := b.do("PATCH", "/api/v1/operators/noted", olga, api.OperatorPatch{MigrationNotes: []api.MigrationNoteRequest{
		{CRD: nwidgets, Version: "3.0.0", URL: guide.URL}}})
	expect(t, "patch with a note for 3.0.0", r, http.StatusOK)
	var op api.Operator
	r.json(t, &op)
	if !slices.Equal(op.Versions, []string{"3.0.0", "2.0.0", "1.0.0"}) {
		t.Fatalf("after the patch: %s", r.body)
	}
	crd = getNotedCRD(t, b, 3)
	if !notedRevision(crd.Revisions[1], "2.0.0", yellow) || !notedRevision(crd.Revisions[2], "3.0.0", guide) {
		t.Fatalf("after the patch: revisions %+v", crd.Revisions)
	}
	b2, c3 := crd.Revisions[1].Digest, crd.Revisions[2].Digest
	checkNotedValidate(t, b, "3.0.0", guide, []api.RevisionNote{{CRD: nwidgets, Version: "2.0.0", Digest: b2, Note: yellow},
		{CRD: nwidgets, Version: "3.0.0", Digest: c3, Note: guide}})

	// Without a version: the newest version's revision, its note replaced.
	replaced := api.MigrationNote{Text: "Rename spec.count's numbers to strings before upgrading.", URL: "https://docs.example.com/nwidgets/3"}
	res = refreshOK(t, b, olga, "noted", api.RefreshRequest{MigrationNotes: []api.MigrationNoteRequest{{CRD: nwidgets, Text: replaced.Text, URL: replaced.URL}}})
	if len(res.Added)+len(res.Removed) != 0 {
		t.Fatalf("refresh with nothing new: %+v", res)
	}
	if crd = getNotedCRD(t, b, 3); !notedRevision(crd.Revisions[2], "3.0.0", replaced) || !notedRevision(crd.Revisions[1], "2.0.0", yellow) {
		t.Fatalf("after replacing 3.0.0's note: revisions %+v", crd.Revisions)
	}
	var def api.CRDRevisionDefinition
	b.do("GET", "/api/v1/crds/"+nwidgets+"/revisions/3.0.0", b.viewer(), nil).json(t, &def)
	if !notedRevision(def.Revision, "3.0.0", replaced) {
		t.Fatalf("GET /revisions/3.0.0: %+v", def.Revision)
	}

	// A note the refresh cannot place: 400, and the version it found is not stored either.
	repo.Add(t, notedChart("4.0.0", charttest.Base))
	expectInvalid(t, "refresh with a note for a version the source lacks", b.do("POST", "/api/v1/operators/noted/refresh", olga,
		api.RefreshRequest{MigrationNotes: []api.MigrationNoteRequest{{CRD: nwidgets, Version: "9.9.9", Text: "x"}}}), "migrationNotes[0].version")
	expectInvalid(t, "patch with a note for a version the source lacks", b.do("PATCH", "/api/v1/operators/noted", olga,
		api.OperatorPatch{MigrationNotes: []api.MigrationNoteRequest{{CRD: nwidgets, Version: "9.9.9", Text: "x"}}}), "migrationNotes[0].version")
	op = api.Operator{}
	b.do("GET", "/api/v1/operators/noted", b.viewer(), nil).json(t, &op)
	if !slices.Equal(op.Versions, []string{"3.0.0", "2.0.0", "1.0.0"}) {
		t.Fatalf("refused notes stored the version found with them: %+v", op.Versions)
	}
	if res = refreshOK(t, b, olga, "noted", nil); !slices.Equal(res.Added, []string{"4.0.0"}) {
		t.Fatalf("refresh without notes: %+v", res)
	}

	checkNotedAudit(t, b)
}

// getNotedCRD is GET /crds/nwidgets with n revisions (oldest first).
func getNotedCRD(t *testing.T, b *bundle, n int) api.CRD {
	t.Helper()
	r := b.do("GET", "/api/v1/crds/"+nwidgets, b.viewer(), nil)
	expect(t, "get "+nwidgets, r, http.StatusOK)
	var crd api.CRD
	r.json(t, &crd)
	if len(crd.Revisions) != n {
		t.Fatalf("%s has %d revisions, want %d: %s", nwidgets, len(crd.Revisions), n, r.body)
	}
	return crd
}

// notedRevision: rev is the revision version first shipped, with note.
func notedRevision(rev api.CRDRevision, version string, note api.MigrationNote) bool {
	return rev.Version == version && rev.Operator == "noted" && rev.MigrationNote != nil && *rev.MigrationNote == note
}

// checkNotedValidate: validating version against 1.0.0 shows the note of version's revision and
// the notes on the way.
func checkNotedValidate(t *testing.T, b *bundle, version string, note api.MigrationNote, way []api.RevisionNote) {
	t.Helper()
	r := b.do("POST", "/api/v1/crds/"+nwidgets+"/validate", b.viewer(), api.ValidateRequest{Operator: "noted", Version: version, BaseVersion: "1.0.0"})
	expect(t, "validate "+version, r, http.StatusOK)
	var rep api.ValidationReport
	r.json(t, &rep)
	if rep.To.MigrationNote == nil || *rep.To.MigrationNote != note || rep.From == nil || rep.From.Version != "1.0.0" ||
		!slices.Equal(rep.MigrationNotes, way) {
		t.Fatalf("validate %s against 1.0.0: %s", version, r.body)
	}
}

// checkNotedAudit: the refreshes and the patch that gave notes are audited as successes, the
// refused ones as invalid.
func checkNotedAudit(t *testing.T, b *bundle) {
	t.Helper()
	var audit api.AuditList
	b.do("GET", "/api/v1/audit?limit=1000", b.admin(), nil).json(t, &audit)
	count := map[string]int{}
	for _, e := range audit.Items {
		if e.TargetName == "noted" {
			count[e.Action+"/"+e.Result]++
		}
	}
	want := map[string]int{"operator.create/success": 1, "operator.refresh/success": 3, "operator.refresh/invalid": 1,
		"operator.update/success": 1, "operator.update/invalid": 1}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("audit records %s: %d, want %d (%v)", k, count[k], n, count)
		}
	}
}
