package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/analysis"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/operators/sourceauth"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := migrateFlags(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	if err := st.CheckSchema(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s database is up to date\n", st.Engine())
	return nil
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token", stderr)
	var a authOptions
	a.bind(fs)
	subject := fs.String("subject", "", "the token's subject (the user id in logs and the audit log)")
	roles := fs.String("role", "", "comma-separated roles: Admin, Operator, Viewer, EnvironmentOwner:<Dev|Staging|Production>")
	ttl := fs.Duration("ttl", 12*time.Hour, "how long the token is valid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *subject == "" || *roles == "" {
		return fmt.Errorf("--subject and --role are required")
	}
	secret, err := a.secret()
	if err != nil {
		return err
	}
	if len(secret) == 0 {
		return fmt.Errorf("no secret: pass --jwt-secret-file or set $%s", envJWTSecret)
	}
	var rs []auth.Role
	for _, r := range strings.Split(*roles, ",") {
		role, err := auth.ParseRole(strings.TrimSpace(r))
		if err != nil {
			return fmt.Errorf("--role: %w", err)
		}
		rs = append(rs, role)
	}
	tok, err := auth.Mint(secret, *subject, rs, *ttl, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

func runRotateKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rotate-key", stderr)
	var db dbOptions
	var keys keyOptions
	db.bind(fs)
	keys.bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	keyring, err := keys.load()
	if err != nil {
		return err
	}
	st, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CheckSchema(ctx); err != nil {
		return err
	}
	cm, err := clusters.New(clusters.Config{Store: st, Keyring: keyring})
	if err != nil {
		return err
	}
	n, err := cm.RotateKeys(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-sealed the credentials of %d clusters under key %s\n", n, keyring.Primary())
	notes, err := notifications.New(notifications.Config{Store: st, Sealer: keyring})
	if err != nil {
		return err
	}
	if n, err = notes.RotateKeys(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-sealed the secrets of %d notification channels under key %s\n", n, keyring.Primary())
	if n, err = sourceauth.RotateKeys(ctx, st, keyring); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-sealed the chart source credentials of %d operators under key %s\n", n, keyring.Primary())
	if n, err = analysis.RotateKeys(ctx, st, keyring); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-sealed the Prometheus credentials of %d clusters under key %s\n", n, keyring.Primary())
	return nil
}

func runGenKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gen-key", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	line, err := clusters.GenerateKey()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, line)
	return nil
}
