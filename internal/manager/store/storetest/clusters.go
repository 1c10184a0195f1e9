package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slipway-dev/slipway/internal/manager/store"
)

var clusterCases = []testCase{
	{"CreateGetRoundTrip", func(t *testing.T, b *testBundle) {
		id := uuid.NewString()
		checked := b.now.Add(-time.Minute)
		expires := b.now.Add(time.Hour)
		p := &store.ClusterCreateParams{
			ID: strings.ToUpper(id), Name: "prod-eu", Environment: store.EnvironmentProduction,
			KubernetesVersion: "v1.37.1", Health: store.HealthHealthy, HealthReason: "ok",
			HealthCheckedAt: &checked, KubeconfigCiphertext: []byte{0, 1, 2, 255},
			TokenCiphertext: []byte("token"), TokenExpiresAt: &expires, KeyID: "key-1", Now: b.now,
		}
		created, err := b.store.ClusterCreate(b.ctx, p)
		requireOK(t, err, "create")
		want := &store.Cluster{
			ID: id, Name: "prod-eu", Environment: store.EnvironmentProduction, KubernetesVersion: "v1.37.1",
			Health: store.HealthHealthy, HealthReason: "ok", HealthCheckedAt: &checked,
			KubeconfigCiphertext: []byte{0, 1, 2, 255}, TokenCiphertext: []byte("token"),
			TokenExpiresAt: &expires, KeyID: "key-1", CreatedAt: b.now, UpdatedAt: b.now,
		}
		requireEqual(t, created, want, "created (id normalized to lowercase)")
		got, err := b.store.ClusterGetByName(b.ctx, "prod-eu")
		requireOK(t, err, "get")
		requireEqual(t, got, want, "get")
		if got.CreatedAt.Location() != time.UTC {
			t.Errorf("CreatedAt in %v, want UTC", got.CreatedAt.Location())
		}
	}},
	{"Defaults", func(t *testing.T, b *testBundle) {
		c, err := b.store.ClusterCreate(b.ctx, &store.ClusterCreateParams{
			ID: uuid.NewString(), Name: "dev", Environment: store.EnvironmentDev,
			KubeconfigCiphertext: []byte("k"), KeyID: "k1", Now: b.now,
		})
		requireOK(t, err, "create")
		if c.Health != store.HealthUnknown || c.HealthCheckedAt != nil || c.TokenCiphertext != nil || c.TokenExpiresAt != nil {
			t.Fatalf("defaults: health %q checked %v token %v expires %v; want Unknown and nils",
				c.Health, c.HealthCheckedAt, c.TokenCiphertext, c.TokenExpiresAt)
		}
	}},
	{"AlreadyExists", func(t *testing.T, b *testBundle) {
		c := Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "taken"})
		_, err := b.store.ClusterCreate(b.ctx, &store.ClusterCreateParams{ID: uuid.NewString(), Name: "taken",
			Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "k1"})
		requireErr(t, err, store.ErrAlreadyExists, "same name")
		_, err = b.store.ClusterCreate(b.ctx, &store.ClusterCreateParams{ID: c.ID, Name: "other",
			Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "k1"})
		requireErr(t, err, store.ErrAlreadyExists, "same id")
		_, err = b.store.ClusterCreate(b.ctx, &store.ClusterCreateParams{ID: "not-a-uuid", Name: "x",
			Environment: store.EnvironmentDev, KubeconfigCiphertext: []byte("k"), KeyID: "k1"})
		if err == nil || !strings.Contains(err.Error(), "not a UUID") {
			t.Fatalf("malformed id: %v, want a 'not a UUID' error", err)
		}
	}},
	{"NotFound", func(t *testing.T, b *testBundle) {
		_, err := b.store.ClusterGetByName(b.ctx, "ghost")
		requireErr(t, err, store.ErrNotFound, "get")
		_, err = b.store.ClusterUpdateHealth(b.ctx, &store.ClusterUpdateHealthParams{Name: "ghost", Health: store.HealthHealthy, CheckedAt: b.now})
		requireErr(t, err, store.ErrNotFound, "update health")
		_, err = b.store.ClusterUpdateCredentials(b.ctx, &store.ClusterUpdateCredentialsParams{Name: "ghost", KubeconfigCiphertext: []byte("k"), KeyID: "k2"})
		requireErr(t, err, store.ErrNotFound, "update credentials")
		requireErr(t, b.store.ClusterDelete(b.ctx, "ghost"), store.ErrNotFound, "delete")
	}},
	{"UpdateHealth", func(t *testing.T, b *testBundle) {
		c := Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "h"})
		at := b.now.Add(time.Minute)
		u, err := b.store.ClusterUpdateHealth(b.ctx, &store.ClusterUpdateHealthParams{
			Name: "h", Health: store.HealthUnhealthy, Reason: "connection refused", CheckedAt: at})
		requireOK(t, err, "update")
		if u.Health != store.HealthUnhealthy || u.HealthReason != "connection refused" ||
			u.HealthCheckedAt == nil || !u.HealthCheckedAt.Equal(at) || u.KubernetesVersion != c.KubernetesVersion {
			t.Fatalf("after unhealthy: %+v (version must stay %s when not given)", u, c.KubernetesVersion)
		}
		u, err = b.store.ClusterUpdateHealth(b.ctx, &store.ClusterUpdateHealthParams{
			Name: "h", Health: store.HealthHealthy, KubernetesVersion: "v1.38.0", CheckedAt: at.Add(time.Minute)})
		requireOK(t, err, "update")
		got, err := b.store.ClusterGetByName(b.ctx, "h")
		requireOK(t, err, "get")
		requireEqual(t, got, u, "stored = returned")
		if got.Health != store.HealthHealthy || got.HealthReason != "" || got.KubernetesVersion != "v1.38.0" {
			t.Fatalf("after healthy: %+v", got)
		}
	}},
	{"UpdateCredentials", func(t *testing.T, b *testBundle) {
		c := Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "creds"})
		exp := b.now.Add(time.Hour)
		later := b.now.Add(time.Minute)
		u, err := b.store.ClusterUpdateCredentials(b.ctx, &store.ClusterUpdateCredentialsParams{
			Name: "creds", KubeconfigCiphertext: []byte("resealed"), TokenCiphertext: []byte("tok"),
			TokenExpiresAt: &exp, KeyID: "k2", Now: later})
		requireOK(t, err, "update")
		if string(u.KubeconfigCiphertext) != "resealed" || string(u.TokenCiphertext) != "tok" ||
			u.KeyID != "k2" || !u.TokenExpiresAt.Equal(exp) || !u.UpdatedAt.Equal(later) || !u.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("after update: %+v", u)
		}
		got, err := b.store.ClusterGetByName(b.ctx, "creds")
		requireOK(t, err, "get")
		requireEqual(t, got, u, "stored = returned")
	}},
	{"DeleteAndCount", func(t *testing.T, b *testBundle) {
		n, err := b.store.ClusterCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, 0, "count of an empty store")
		Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "a"})
		Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "b"})
		n, err = b.store.ClusterCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, 2, "count")
		requireOK(t, b.store.ClusterDelete(b.ctx, "a"), "delete")
		_, err = b.store.ClusterGetByName(b.ctx, "a")
		requireErr(t, err, store.ErrNotFound, "get after delete")
		requireErr(t, b.store.ClusterDelete(b.ctx, "a"), store.ErrNotFound, "delete twice")
		n, err = b.store.ClusterCount(b.ctx)
		requireOK(t, err, "count")
		requireEqual(t, n, 1, "count after delete")
		// The name is free again.
		Cluster(b.ctx, t, b.store, &ClusterOpts{Name: "a"})
	}},
	{"ListPagesAndFilters", func(t *testing.T, b *testBundle) {
		all := seq("c", 25)
		envOf := func(i int) store.Environment { return store.Environments[i%3] }
		healthOf := func(i int) store.Health {
			if i%2 == 0 {
				return store.HealthHealthy
			}
			return store.HealthUnhealthy
		}
		// Created out of order: the list is by name, not by insertion.
		for i := len(all) - 1; i >= 0; i-- {
			Cluster(b.ctx, t, b.store, &ClusterOpts{Name: all[i], Environment: envOf(i), Health: healthOf(i)})
		}
		list := func(p store.ClusterListParams) []string {
			var out []string
			for {
				page, err := b.store.ClusterList(b.ctx, &p)
				requireOK(t, err, "list")
				if len(page) > p.Limit {
					t.Fatalf("page of %d, limit %d", len(page), p.Limit)
				}
				out = append(out, names(page, func(c *store.Cluster) string { return c.Name })...)
				if len(page) < p.Limit {
					return out
				}
				p.After = page[len(page)-1].Name
			}
		}
		requireEqual(t, list(store.ClusterListParams{Limit: 10}), all, "all, pages of 10")
		requireEqual(t, list(store.ClusterListParams{Limit: 1}), all, "all, pages of 1")
		var prod, prodHealthy []string
		for i, n := range all {
			if envOf(i) == store.EnvironmentProduction {
				prod = append(prod, n)
				if healthOf(i) == store.HealthHealthy {
					prodHealthy = append(prodHealthy, n)
				}
			}
		}
		requireEqual(t, list(store.ClusterListParams{Environment: store.EnvironmentProduction, Limit: 3}), prod, "Production")
		requireEqual(t, list(store.ClusterListParams{Environment: store.EnvironmentProduction, Health: store.HealthHealthy, Limit: 2}), prodHealthy, "Production and Healthy")
		page, err := b.store.ClusterList(b.ctx, &store.ClusterListParams{})
		requireOK(t, err, "list without limit")
		requireEqual(t, len(page), len(all), "default limit covers 25")
		page, err = b.store.ClusterList(b.ctx, &store.ClusterListParams{After: all[len(all)-1]})
		requireOK(t, err, "list past the end")
		if page == nil || len(page) != 0 {
			t.Fatalf("past the end: %v, want an empty, non-nil list", page)
		}
	}},
}
