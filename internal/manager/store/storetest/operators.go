package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

var operatorCases = []testCase{
	{"CreateGetRoundTrip", func(t *testing.T, b *testBundle) {
		id := uuid.NewString()
		o, err := b.store.OperatorCreate(b.ctx, &store.OperatorCreateParams{
			ID: strings.ToUpper(id), Name: "cert-manager", Namespace: "cert-manager",
			ChartRepository: "https://charts.jetstack.io", ChartName: "cert-manager",
			VersionFilter: ">= 1.14", Now: b.now})
		requireOK(t, err, "create")
		want := &store.Operator{ID: id, Name: "cert-manager", Namespace: "cert-manager",
			ChartRepository: "https://charts.jetstack.io", ChartName: "cert-manager",
			VersionFilter: ">= 1.14", CreatedAt: b.now, UpdatedAt: b.now}
		requireEqual(t, o, want, "created")
		got, err := b.store.OperatorGetByName(b.ctx, "cert-manager")
		requireOK(t, err, "get by name")
		requireEqual(t, got, want, "get by name")
		for _, form := range []string{id, strings.ToUpper(id)} {
			got, err = b.store.OperatorGetByID(b.ctx, form)
			requireOK(t, err, "get by id "+form)
			requireEqual(t, got, want, "get by id "+form)
		}
	}},
	{"AlreadyExists", func(t *testing.T, b *testBundle) {
		o := Operator(b.ctx, t, b.store, &OperatorOpts{Name: "taken"})
		_, err := b.store.OperatorCreate(b.ctx, &store.OperatorCreateParams{ID: uuid.NewString(), Name: "taken",
			Namespace: "x", ChartRepository: "oci://r/c", ChartName: "c"})
		requireErr(t, err, store.ErrAlreadyExists, "same name")
		_, err = b.store.OperatorCreate(b.ctx, &store.OperatorCreateParams{ID: o.ID, Name: "other",
			Namespace: "x", ChartRepository: "oci://r/c", ChartName: "c"})
		requireErr(t, err, store.ErrAlreadyExists, "same id")
	}},
	{"NotFound", func(t *testing.T, b *testBundle) {
		_, err := b.store.OperatorGetByName(b.ctx, "ghost")
		requireErr(t, err, store.ErrNotFound, "get by name")
		_, err = b.store.OperatorGetByID(b.ctx, uuid.NewString())
		requireErr(t, err, store.ErrNotFound, "get by unknown id")
		_, err = b.store.OperatorGetByID(b.ctx, "not-a-uuid")
		requireErr(t, err, store.ErrNotFound, "get by malformed id")
		_, err = b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{OperatorID: uuid.NewString(), Version: "1.0.0"})
		requireErr(t, err, store.ErrNotFound, "version of an unknown operator")
		vs, err := b.store.OperatorVersionList(b.ctx, uuid.NewString())
		requireOK(t, err, "versions of an unknown operator")
		if vs == nil || len(vs) != 0 {
			t.Fatalf("versions of an unknown operator: %v, want empty, non-nil", vs)
		}
	}},
	{"ListPagesAndFilters", func(t *testing.T, b *testBundle) {
		all := seq("op", 23)
		var inA []string
		for i := len(all) - 1; i >= 0; i-- {
			ns := "ns-b"
			if i%4 == 0 {
				ns = "ns-a"
			}
			Operator(b.ctx, t, b.store, &OperatorOpts{Name: all[i], Namespace: ns})
		}
		for i, n := range all {
			if i%4 == 0 {
				inA = append(inA, n)
			}
		}
		list := func(p store.OperatorListParams) []string {
			var out []string
			for {
				page, err := b.store.OperatorList(b.ctx, &p)
				requireOK(t, err, "list")
				out = append(out, names(page, func(o *store.Operator) string { return o.Name })...)
				if len(page) < p.Limit {
					return out
				}
				p.After = page[len(page)-1].Name
			}
		}
		requireEqual(t, list(store.OperatorListParams{Limit: 5}), all, "all, pages of 5")
		requireEqual(t, list(store.OperatorListParams{Namespace: "ns-a", Limit: 2}), inA, "namespace ns-a")
		n, err := b.store.OperatorCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, len(all), "count")
	}},
	{"VersionsNewestFirstAndUpsert", func(t *testing.T, b *testBundle) {
		o := Operator(b.ctx, t, b.store, nil)
		other := Operator(b.ctx, t, b.store, nil)
		for _, v := range []string{"1.2.0", "1.10.0", "0.9.1", "1.10.0-rc.1", "v2.0.0", "1.9.0"} {
			got, err := b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{
				OperatorID: o.ID, Version: v, AppVersion: "app-" + v, Digest: "sha256:" + v, Now: b.now})
			requireOK(t, err, "upsert "+v)
			requireEqual(t, got, &store.OperatorVersion{OperatorID: o.ID, Version: v, AppVersion: "app-" + v,
				Digest: "sha256:" + v, CreatedAt: b.now}, "upserted "+v)
		}
		_, err := b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{OperatorID: other.ID, Version: "9.9.9"})
		requireOK(t, err, "other operator's version")
		// Again, later, with a new digest: one row, the first creation time, the new digest.
		again, err := b.store.OperatorVersionUpsert(b.ctx, &store.OperatorVersionUpsertParams{
			OperatorID: o.ID, Version: "1.2.0", AppVersion: "app-1.2.0", Digest: "sha256:new", Now: b.now.Add(time.Hour)})
		requireOK(t, err, "upsert again")
		if again.Digest != "sha256:new" || !again.CreatedAt.Equal(b.now) {
			t.Fatalf("upsert again: %+v, want the new digest and the first creation time", again)
		}
		vs, err := b.store.OperatorVersionList(b.ctx, o.ID)
		requireOK(t, err, "list")
		requireEqual(t, names(vs, func(v *store.OperatorVersion) string { return v.Version }),
			[]string{"v2.0.0", "1.10.0", "1.10.0-rc.1", "1.9.0", "1.2.0", "0.9.1"}, "newest semver first")
		requireEqual(t, vs[4].Digest, "sha256:new", "digest after upsert")

		// The same for a page of operators in one query.
		many, err := b.store.OperatorVersionListMany(b.ctx, []string{o.ID, other.ID, "not-a-uuid", uuid.NewString()})
		requireOK(t, err, "list many")
		requireEqual(t, len(many), 2, "operators with versions")
		requireEqual(t, many[o.ID], vs, "versions of the first operator")
		requireEqual(t, names(many[other.ID], func(v *store.OperatorVersion) string { return v.Version }), []string{"9.9.9"}, "the other's")
		none, err := b.store.OperatorVersionListMany(b.ctx, nil)
		requireOK(t, err, "list many of none")
		requireEqual(t, len(none), 0, "no operators")
	}},
}
