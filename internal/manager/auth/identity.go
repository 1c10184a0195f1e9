package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Identity is a verified caller.
type Identity struct {
	// Subject is the token's sub claim: the user id for rate limits and the audit log.
	Subject string
	// Roles holds each role once; EnvironmentOwner is present when Environments is not empty.
	Roles []Role
	// Environments are the environments the caller owns (canonical names: Dev, Staging, Production).
	Environments []string
	// Token is the verified token this identity came from (zero for an identity made otherwise).
	Token TokenInfo
}

// TokenInfo names a verified token, so that it can be revoked (DELETE /api/v1/session) and a
// revoked one refused: its issuer, its id and when it expires.
type TokenInfo struct {
	// Issuer is the iss claim ("" when the token has none).
	Issuer string
	// ID is the jti claim: "" when the token has none (tokens Mint made before it wrote one, and
	// the ID tokens of issuers that write none); such a token cannot be revoked, only expire.
	ID string
	// ExpiresAt is the exp claim.
	ExpiresAt time.Time
}

// Has reports whether the identity holds any of roles. No role implies another: an Admin that is
// not also listed as an Operator does not "have" Operator; route tables list every role they admit.
func (id *Identity) Has(roles ...Role) bool {
	if id == nil {
		return false
	}
	for _, r := range roles {
		if slices.Contains(id.Roles, r) {
			return true
		}
	}
	return false
}

// OwnsEnvironment reports whether the identity is EnvironmentOwner of env (matched case-insensitively).
func (id *Identity) OwnsEnvironment(env string) bool {
	if id == nil {
		return false
	}
	for _, e := range id.Environments {
		if strings.EqualFold(e, env) {
			return true
		}
	}
	return false
}

// String is "subject [Role ...] owns [env ...]" for logs.
func (id *Identity) String() string {
	if id == nil {
		return "<anonymous>"
	}
	s := fmt.Sprintf("%s %v", id.Subject, id.Roles)
	if len(id.Environments) > 0 {
		s += fmt.Sprintf(" owns %v", id.Environments)
	}
	return s
}

// addRole records a parsed role once.
func (id *Identity) addRole(r Role, env string) {
	if !slices.Contains(id.Roles, r) {
		id.Roles = append(id.Roles, r)
	}
	if env != "" && !slices.Contains(id.Environments, env) {
		id.Environments = append(id.Environments, env)
	}
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity WithIdentity stored in ctx.
func IdentityFrom(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	return id, ok && id != nil
}
