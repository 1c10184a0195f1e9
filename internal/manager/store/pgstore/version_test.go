package pgstore_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/pgtest"
)

// The store runs on PostgreSQL 15 or newer and refuses an older server naming the version found.
func TestCheckServerVersion(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		num, version string
		want         string // "" = accepted; else a part of the error
	}{
		{"150000", "15.0", ""},
		{"150004", "15.4 (Debian 15.4-1)", ""},
		{"160002", "16.2", ""},
		{"170000", "17.0", ""},
		{"149999", "14.99", "PostgreSQL 14.99 (server_version_num 149999)"},
		{"140011", "14.11 (Ubuntu 14.11-0ubuntu0.22.04.1)", "PostgreSQL 14.11 (Ubuntu 14.11-0ubuntu0.22.04.1) (server_version_num 140011)"},
		{"90624", "9.6.24", "PostgreSQL 9.6.24 (server_version_num 90624)"},
		{"", "15.0", `server_version_num ""`},
		{"fifteen", "15.0", `server_version_num "fifteen"`},
	} {
		err := pgstore.CheckServerVersion(tt.num, tt.version)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckServerVersion(%q, %q): %v, want accepted", tt.num, tt.version, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "PostgreSQL 15 or newer")):
			t.Errorf("CheckServerVersion(%q, %q): %v, want an error naming %q and PostgreSQL 15", tt.num, tt.version, err, tt.want)
		}
	}
}

// The test server (PostgreSQL 15 or newer) passes the check that Open makes.
func TestOpenChecksServerVersion(t *testing.T) {
	t.Parallel()
	s, err := pgstore.Open(t.Context(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatalf("Open on the test server: %v", err)
	}
	defer s.Close()
	var num, version string
	if err := s.Pool().QueryRow(t.Context(), "SELECT current_setting('server_version_num'), current_setting('server_version')").
		Scan(&num, &version); err != nil {
		t.Fatal(err)
	}
	if err := pgstore.CheckServerVersion(num, version); err != nil {
		t.Fatalf("the test server %s (%s): %v", version, num, err)
	}
	t.Logf("test server: PostgreSQL %s (server_version_num %s)", version, num)
}
