package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// MinServerVersion is the oldest PostgreSQL the store runs on, as server_version_num (15.0).
const MinServerVersion = 150000

// CheckServerVersion refuses a server older than MinServerVersion. num is the server's
// server_version_num (150004 for 15.4); version its server_version ("15.4 (Debian 15.4-1)"), used
// only in the message.
func CheckServerVersion(num, version string) error {
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 {
		return fmt.Errorf("postgres store: the server reports server_version_num %q (server_version %q), not a number: "+
			"the manager needs PostgreSQL 15 or newer", num, version)
	}
	if n < MinServerVersion {
		return fmt.Errorf("postgres store: the server is PostgreSQL %s (server_version_num %d) but the manager needs "+
			"PostgreSQL 15 or newer: upgrade the server or point --database-url at a PostgreSQL 15+ server", version, n)
	}
	return nil
}

// checkServer reads the server's version over pool and refuses one that is too old.
func checkServer(ctx context.Context, pool *pgxpool.Pool) error {
	var num, version string
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num'), current_setting('server_version')").
		Scan(&num, &version); err != nil {
		return fmt.Errorf("postgres store: reading the server version: %w", err)
	}
	return CheckServerVersion(num, version)
}
