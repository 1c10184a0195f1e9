package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Identity is a verified caller.
type Identity struct {
	// Subject is the token's sub claim: the user id for rate limits and the audit log.
	Subject string
	// Roles holds each role once; EnvironmentOwner is present when Environments is not empty.
	Roles []Role
	// Environments are the environments the caller owns (canonical names: Dev, Staging, Production).
	Environments []string
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
