package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
)

// Environment variables that hold secrets (never flags: a flag's value shows in ps).
const (
	envDatabaseURL    = "SLIPWAY_MANAGER_DATABASE_URL"
	envJWTSecret      = "SLIPWAY_MANAGER_JWT_SECRET"
	envEncryptionKeys = "SLIPWAY_MANAGER_ENCRYPTION_KEYS"
)

// dbOptions selects the engine: PostgreSQL with --database-url, embedded SQLite otherwise.
type dbOptions struct {
	url  string
	path string
}

func (o *dbOptions) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.url, "database-url", "", "PostgreSQL URL (postgres://user@host/db); selects PostgreSQL. Also $"+envDatabaseURL)
	fs.StringVar(&o.path, "database-path", "slipway-manager.db", "the embedded SQLite database file, used when no database URL is given")
}

// migratingStore is an engine with its schema operations.
type migratingStore interface {
	store.Store
	Migrate(ctx context.Context) error
	CheckSchema(ctx context.Context) error
}

func (o *dbOptions) open(ctx context.Context) (migratingStore, error) {
	url := o.url
	if url == "" {
		url = os.Getenv(envDatabaseURL)
	}
	if url != "" {
		if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
			return nil, errors.New("--database-url must be a postgres:// URL")
		}
		return pgstore.Open(ctx, url)
	}
	if o.path == "" {
		return nil, errors.New("--database-path is empty and no --database-url is given")
	}
	return sqlitestore.Open(ctx, o.path)
}

// keyOptions loads the keyring that seals cluster credentials.
type keyOptions struct {
	file string
}

func (o *keyOptions) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.file, "encryption-key-file", "",
		"file of encryption keys, one 'id:base64(32 bytes)' a line, the first the primary (manager gen-key makes one). Also $"+envEncryptionKeys)
}

func (o *keyOptions) load() (*clusters.Keyring, error) {
	switch {
	case o.file != "":
		return clusters.LoadKeyring(o.file)
	case os.Getenv(envEncryptionKeys) != "":
		return clusters.ParseKeyring([]byte(os.Getenv(envEncryptionKeys)))
	}
	return nil, fmt.Errorf("no encryption key: pass --encryption-key-file or set $%s (manager gen-key prints a key line)", envEncryptionKeys)
}

// authOptions configures token verification: HS256 with a shared secret, an OIDC issuer, or both.
type authOptions struct {
	secretFile string
	issuer     string
	audience   string
	roleClaim  string
	leeway     time.Duration
	// uiClientID is serve's --ui-oidc-client-id: the ID tokens the web UI sends carry it as their
	// audience, so they are accepted beside --oidc-audience's (when it differs).
	uiClientID string
}

func (o *authOptions) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.secretFile, "jwt-secret-file", "", "file holding the HS256 secret (at least 32 bytes). Also $"+envJWTSecret)
	fs.StringVar(&o.issuer, "oidc-issuer-url", "", "OIDC issuer whose JWKS verifies RS256/ES256 tokens")
	fs.StringVar(&o.audience, "oidc-audience", "", "the audience (client id) OIDC tokens must carry")
	fs.StringVar(&o.roleClaim, "role-claim", "roles", "the token claim that lists the caller's roles")
	fs.DurationVar(&o.leeway, "jwt-leeway", 30*time.Second, "clock skew allowed on exp/nbf/iat (at most 5m)")
}

func (o *authOptions) secret() ([]byte, error) {
	if o.secretFile != "" {
		b, err := os.ReadFile(o.secretFile)
		if err != nil {
			return nil, fmt.Errorf("reading --jwt-secret-file: %w", err)
		}
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if v := os.Getenv(envJWTSecret); v != "" {
		return []byte(v), nil
	}
	return nil, nil
}

func (o *authOptions) verifier(ctx context.Context) (auth.Verifier, error) {
	opts := auth.Options{RoleClaim: o.roleClaim, Leeway: o.leeway}
	var vs []auth.Verifier
	secret, err := o.secret()
	if err != nil {
		return nil, err
	}
	if len(secret) > 0 {
		v, err := auth.NewHS256(secret, opts)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	if o.issuer != "" {
		if o.audience == "" {
			return nil, errors.New("--oidc-audience is required with --oidc-issuer-url")
		}
		v, err := auth.NewOIDC(ctx, o.issuer, o.audience, opts)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
		if o.uiClientID != "" && o.uiClientID != o.audience {
			ui, err := auth.NewOIDC(ctx, o.issuer, o.uiClientID, opts)
			if err != nil {
				return nil, err
			}
			vs = append(vs, ui)
		}
	}
	switch len(vs) {
	case 0:
		return nil, fmt.Errorf("no way to verify tokens: pass --jwt-secret-file (or $%s) and/or --oidc-issuer-url", envJWTSecret)
	case 1:
		return vs[0], nil
	}
	return auth.Chain(vs...), nil
}
