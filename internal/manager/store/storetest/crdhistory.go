package storetest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// histCRD is a small CRD <plural>.example.com whose schema differs by variant.
func histCRD(plural, variant string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: "K" + plural},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Description: variant}}}},
		},
	}
}

// histRecord upserts version of op and records the CRDs it ships, as registration does.
func histRecord(t *testing.T, b *testBundle, op *store.Operator, version string, defs ...*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	err := store.WithTx(b.ctx, b.store, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.OperatorVersionUpsert(ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: version, Now: b.now}); err != nil {
			return err
		}
		return crds.RecordVersion(ctx, tx, &crds.VersionRecord{OperatorID: op.ID, Version: version, CRDs: defs, Now: b.now})
	})
	requireOK(t, err, "record "+version)
}

// histDigest is the digest the store keeps for def.
func histDigest(t *testing.T, def *apiextensionsv1.CustomResourceDefinition) string {
	t.Helper()
	d, err := crds.Digest(def)
	requireOK(t, err, "digest")
	return d
}

// histAt is "digest" of what version ships of name, "dropped", or "" (nothing).
func histAt(t *testing.T, b *testBundle, op *store.Operator, version, name string) string {
	t.Helper()
	h, err := crds.LoadHistory(b.ctx, b.store, op.ID, name)
	requireOK(t, err, "load history")
	s := h.At(version, name)
	switch {
	case s.Row != nil:
		return s.Row.Digest
	case s.Dropped:
		return crds.DroppedDigest
	}
	return ""
}

var crdHistoryCases = []testCase{
	{"ABAShipsTheOlderRevisionAgain", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, nil)
		a, bb := histCRD("things", "A"), histCRD("things", "B")
		histRecord(t, b, op, "1.0.0", a)
		histRecord(t, b, op, "2.0.0", bb)
		histRecord(t, b, op, "3.0.0", a)
		const name = "things.example.com"
		// Revisions stay de-duplicated by digest: two, the first labelled with 1.0.0.
		revs, err := b.store.CRDSchemaList(b.ctx, &store.CRDSchemaListParams{Name: name})
		requireOK(t, err, "revisions")
		requireEqual(t, names(revs, func(s *store.CRDSchema) string { return s.Version }), []string{"1.0.0", "2.0.0"}, "revisions")
		requireEqual(t, []string{histAt(t, b, op, "1.0.0", name), histAt(t, b, op, "2.0.0", name), histAt(t, b, op, "3.0.0", name)},
			[]string{histDigest(t, a), histDigest(t, bb), histDigest(t, a)}, "what each version ships")
		rows, err := b.store.CRDVersionList(b.ctx, &store.CRDVersionListParams{CRDName: name})
		requireOK(t, err, "rows by CRD")
		requireEqual(t, names(rows, func(r *store.CRDShipped) string { return r.Version + "=" + r.Digest }),
			[]string{"1.0.0=" + histDigest(t, a), "2.0.0=" + histDigest(t, bb), "3.0.0=" + histDigest(t, a)}, "rows")
		if rows[0].SchemaID != rows[2].SchemaID || rows[0].SchemaID != revs[0].ID || rows[0].HasNote {
			t.Fatalf("1.0.0 and 3.0.0 point at different revisions, or a note appeared: %+v", rows)
		}
		recorded, err := b.store.CRDVersionRecordList(b.ctx, op.ID)
		requireOK(t, err, "recorded versions")
		requireEqual(t, len(recorded), 3, "recorded versions")

		// A note on the revision shows on every version that ships it.
		got, err := b.store.CRDSchemaSetNote(b.ctx, &store.CRDSchemaSetNoteParams{ID: revs[0].ID,
			Note: store.MigrationNote{Text: "Move `spec.a` to `spec.b`.", URL: "https://example.com/guide"}})
		requireOK(t, err, "set note")
		requireEqual(t, got.Note, store.MigrationNote{Text: "Move `spec.a` to `spec.b`.", URL: "https://example.com/guide"}, "note")
		again, err := b.store.CRDSchemaGetByID(b.ctx, revs[0].ID)
		requireOK(t, err, "get by id")
		requireEqual(t, again, got, "read back")
		byDigest, err := b.store.CRDSchemaGetByDigest(b.ctx, &store.CRDSchemaGetByDigestParams{Name: name, OperatorID: op.ID, Digest: histDigest(t, a)})
		requireOK(t, err, "get by digest")
		requireEqual(t, byDigest, got, "by digest")
		rows, err = b.store.CRDVersionList(b.ctx, &store.CRDVersionListParams{OperatorID: op.ID, Version: "3.0.0"})
		requireOK(t, err, "rows of 3.0.0")
		if len(rows) != 1 || !rows[0].HasNote {
			t.Fatalf("3.0.0's row: %+v, want one with a note", rows)
		}
		_, err = b.store.CRDSchemaGetByID(b.ctx, 1<<40)
		requireErr(t, err, store.ErrNotFound, "unknown revision")
		_, err = b.store.CRDSchemaGetByDigest(b.ctx, &store.CRDSchemaGetByDigestParams{Name: name, OperatorID: "", Digest: histDigest(t, a)})
		requireErr(t, err, store.ErrNotFound, "the digest posted directly (never)")
		_, err = b.store.CRDSchemaSetNote(b.ctx, &store.CRDSchemaSetNoteParams{ID: 1 << 40})
		requireErr(t, err, store.ErrNotFound, "note on an unknown revision")
	}},
	{"DroppedCRD", func(t *testing.T, b *testBundle) {
		op := Operator(b.ctx, t, b.store, nil)
		histRecord(t, b, op, "1.0.0", histCRD("olds", "A"), histCRD("keeps", "A"))
		histRecord(t, b, op, "2.0.0", histCRD("keeps", "A"))
		histRecord(t, b, op, "3.0.0", histCRD("keeps", "B"), histCRD("news", "A"))
		requireEqual(t, histAt(t, b, op, "1.0.0", "olds.example.com"), histDigest(t, histCRD("olds", "A")), "1.0.0 ships olds")
		requireEqual(t, histAt(t, b, op, "2.0.0", "olds.example.com"), crds.DroppedDigest, "2.0.0 dropped olds")
		requireEqual(t, histAt(t, b, op, "3.0.0", "olds.example.com"), crds.DroppedDigest, "3.0.0 does not ship it either")
		requireEqual(t, histAt(t, b, op, "2.0.0", "news.example.com"), "", "2.0.0 never shipped news: not dropped")
		h, err := crds.LoadHistory(b.ctx, b.store, op.ID, "")
		requireOK(t, err, "history of every CRD")
		got, ok := h.Names("2.0.0")
		requireEqual(t, got, []string{"keeps.example.com"}, "CRDs of 2.0.0")
		if !ok || h.Previous("2.0.0") != "1.0.0" || h.Previous("1.0.0") != "" {
			t.Fatalf("2.0.0 recorded %v, previous %q", ok, h.Previous("2.0.0"))
		}
		path := h.Between("keeps.example.com", "1.0.0", "3.0.0")
		requireEqual(t, names(path, func(s crds.Shipped) string { return s.Version }), []string{"2.0.0", "3.0.0"}, "the way up")

		// Recording a version again replaces its list (the refresh of a re-published version).
		histRecord(t, b, op, "2.0.0", histCRD("keeps", "A"), histCRD("olds", "A"))
		requireEqual(t, histAt(t, b, op, "2.0.0", "olds.example.com"), histDigest(t, histCRD("olds", "A")), "2.0.0 recorded again")
		// A record that cannot be written leaves the old one whole: an unknown revision, an
		// unknown version.
		_, err = b.store.CRDVersionSet(b.ctx, &store.CRDVersionSetParams{OperatorID: op.ID, Version: "2.0.0",
			Revisions: map[string]int64{"keeps.example.com": 1 << 40}, Now: b.now})
		requireErr(t, err, store.ErrNotFound, "unknown revision")
		requireEqual(t, histAt(t, b, op, "2.0.0", "olds.example.com"), histDigest(t, histCRD("olds", "A")), "2.0.0 after a refused record")
		_, err = b.store.CRDVersionSet(b.ctx, &store.CRDVersionSetParams{OperatorID: op.ID, Version: "9.9.9", Now: b.now})
		requireErr(t, err, store.ErrNotFound, "unknown version")
		_, err = b.store.CRDVersionSet(b.ctx, &store.CRDVersionSetParams{OperatorID: uuid.NewString(), Version: "1.0.0", Now: b.now})
		requireErr(t, err, store.ErrNotFound, "unknown operator")
		_, err = b.store.CRDVersionList(b.ctx, &store.CRDVersionListParams{})
		if err == nil {
			t.Fatal("listing without an operator or CRD: no error")
		}
	}},
	{"UnrecordedVersionsInferAsBefore", func(t *testing.T, b *testBundle) {
		// Versions registered before migration 00006 have rows only for the revisions they
		// introduced and no record: the others read as the newest revision at or below them.
		op := Operator(b.ctx, t, b.store, nil)
		histRecord(t, b, op, "1.0.0", histCRD("things", "A"))
		for _, v := range []string{"1.1.0", "2.0.0"} {
			_, err := b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{OperatorID: op.ID, Version: v, Now: b.now})
			requireOK(t, err, "version "+v)
		}
		h, err := crds.LoadHistory(b.ctx, b.store, op.ID, "things.example.com")
		requireOK(t, err, "history")
		s := h.At("2.0.0", "things.example.com")
		if s.Row == nil || !s.Inferred || s.Dropped || s.Row.Digest != histDigest(t, histCRD("things", "A")) {
			t.Fatalf("2.0.0 unrecorded: %+v, want 1.0.0's revision, inferred", s)
		}
		if _, ok := h.Names("2.0.0"); ok {
			t.Fatal("2.0.0 unrecorded: Names says its list is known")
		}
	}},
	{"DeploymentMigrationNotes", func(t *testing.T, b *testBundle) {
		d1 := Deployment(b.ctx, t, b.store, nil)
		d2 := Deployment(b.ctx, t, b.store, nil)
		n := func(crd, text string) *store.DeploymentMigrationNote {
			return &store.DeploymentMigrationNote{CRDName: crd, Version: "2.0.0", Digest: "sha256:" + crd, Note: store.MigrationNote{Text: text}}
		}
		_, err := b.store.DeploymentMigrationNotesSet(b.ctx, d1.ID, []*store.DeploymentMigrationNote{n("b.example.com", "first"), n("a.example.com", "second")})
		requireOK(t, err, "set")
		set, err := b.store.DeploymentMigrationNotesSet(b.ctx, d2.ID, []*store.DeploymentMigrationNote{n("c.example.com", "old")})
		requireOK(t, err, "set d2")
		requireEqual(t, set[0].DeploymentID, d2.ID, "returned with the deployment")
		// Planning again replaces them.
		_, err = b.store.DeploymentMigrationNotesSet(b.ctx, d2.ID, []*store.DeploymentMigrationNote{n("c.example.com", "new"), n("d.example.com", "more")})
		requireOK(t, err, "replace")
		got, err := b.store.DeploymentMigrationNotesListMany(b.ctx, []string{d1.ID, d2.ID, uuid.NewString(), "not-a-uuid"})
		requireOK(t, err, "list")
		text := func(ns []*store.DeploymentMigrationNote) []string {
			return names(ns, func(n *store.DeploymentMigrationNote) string { return n.CRDName + ":" + n.Note.Text })
		}
		requireEqual(t, [][]string{text(got[d1.ID]), text(got[d2.ID])},
			[][]string{{"b.example.com:first", "a.example.com:second"}, {"c.example.com:new", "d.example.com:more"}}, "notes in order")
		requireEqual(t, len(got), 2, "deployments with notes")
		_, err = b.store.DeploymentMigrationNotesSet(b.ctx, d1.ID, nil)
		requireOK(t, err, "clear")
		got, err = b.store.DeploymentMigrationNotesListMany(b.ctx, []string{d1.ID})
		requireOK(t, err, "list after clearing")
		requireEqual(t, len(got), 0, "no notes left")
		_, err = b.store.DeploymentMigrationNotesSet(b.ctx, uuid.NewString(), []*store.DeploymentMigrationNote{n("x.example.com", "x")})
		requireErr(t, err, store.ErrNotFound, "unknown deployment")
	}},
}
