package pgstore_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
)

// The setup of docs/manager.md ("PostgreSQL setup"), as written: a login role without any other
// attribute migrates and serves a database it owns; in a database it does not own, PostgreSQL
// 15's public schema refuses it until it has a schema of its own on its search_path.
func TestMigrateWithoutSuperuser(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := pgtest.Server(t)
	admin, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	exec := func(db, sql string) {
		t.Helper()
		conn := admin
		if db != "postgres" {
			c, err := pgx.Connect(ctx, srv.URL(db))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			conn = c
		}
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	suffix := fmt.Sprint(os.Getpid())
	owner, other := "mgr_owner_"+suffix, "mgr_other_"+suffix
	ownDB, foreignDB := "mgr_own_"+suffix, "mgr_foreign_"+suffix
	t.Cleanup(func() {
		for _, sql := range []string{"DROP DATABASE IF EXISTS " + ownDB + " WITH (FORCE)", "DROP DATABASE IF EXISTS " + foreignDB + " WITH (FORCE)",
			"DROP ROLE IF EXISTS " + owner, "DROP ROLE IF EXISTS " + other} {
			if _, err := admin.Exec(context.Background(), sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	})
	exec("postgres", "CREATE ROLE "+owner+" LOGIN PASSWORD 'change-me'")
	exec("postgres", "CREATE DATABASE "+ownDB+" OWNER "+owner+" ENCODING 'UTF8'")
	exec("postgres", "CREATE ROLE "+other+" LOGIN")
	exec("postgres", "CREATE DATABASE "+foreignDB)

	as := func(role, db string) string {
		u, err := url.Parse(srv.URL(db))
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.User(role)
		return u.String()
	}
	s, err := pgstore.Open(ctx, as(owner, ownDB), pgstore.WithMigrate())
	if err != nil {
		t.Fatalf("migrating as the database's owner: %v", err)
	}
	if n, err := s.ClusterCount(ctx); err != nil || n != 0 {
		t.Fatalf("serving as the owner: %d clusters, %v", n, err)
	}
	_ = s.Close()

	_, err = pgstore.Open(ctx, as(other, foreignDB), pgstore.WithMigrate())
	if err == nil || !strings.Contains(err.Error(), "permission denied for schema public") {
		t.Fatalf("migrating in a database the role does not own: %v, want permission denied for schema public", err)
	}
	exec(foreignDB, "CREATE SCHEMA slipway AUTHORIZATION "+other)
	exec("postgres", "ALTER ROLE "+other+" IN DATABASE "+foreignDB+" SET search_path = slipway")
	s, err = pgstore.Open(ctx, as(other, foreignDB), pgstore.WithMigrate())
	if err != nil {
		t.Fatalf("migrating into the role's own schema: %v", err)
	}
	defer s.Close()
	var schema string
	if err := s.Pool().QueryRow(ctx, "SELECT table_schema FROM information_schema.tables WHERE table_name = 'clusters'").Scan(&schema); err != nil || schema != "slipway" {
		t.Fatalf("the clusters table is in schema %q (%v), want slipway", schema, err)
	}
}
