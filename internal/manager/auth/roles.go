// Package auth turns a bearer token into an Identity: HS256 with a shared secret, or RS256/ES256
// from an OIDC issuer's JWKS, with the algorithms pinned, exp required and clock skew bounded.
//
// Roles come from one claim (default "roles"), a JSON list of strings:
//
//	{"sub": "alice", "exp": 1767225600, "roles": ["Operator", "EnvironmentOwner:Production"]}
//
// "Admin", "Operator" and "Viewer" are global roles; "EnvironmentOwner:<env>" (env one of Dev,
// Staging, Production) gives the EnvironmentOwner role for that environment. A single string is
// taken as a list of one. Unknown strings are ignored and logged, never an error, so an issuer may
// carry roles meant for other services in the same claim. The claim name may be a dotted path into
// nested objects ("realm_access.roles"); a top-level claim of exactly that name wins.
package auth

import (
	"fmt"
	"strings"
)

// Role is what a caller may do. EnvironmentOwner is held per environment (Identity.Environments).
type Role string

// The manager's roles.
const (
	Admin            Role = "Admin"
	Operator         Role = "Operator"
	Viewer           Role = "Viewer"
	EnvironmentOwner Role = "EnvironmentOwner"
)

// Environments are the environments an EnvironmentOwner role may name, in their canonical spelling.
var Environments = []string{"Dev", "Staging", "Production"}

// DefaultRoleClaim is the claim roles are read from unless Options.RoleClaim says otherwise.
const DefaultRoleClaim = "roles"

// EnvironmentOwnerOf is the claim value that makes a token's subject the owner of env
// ("EnvironmentOwner:Production"), for Mint.
func EnvironmentOwnerOf(env string) Role {
	return Role(string(EnvironmentOwner) + ":" + env)
}

// ParseRole checks one role as a token's claim carries it ("Admin", "EnvironmentOwner:Production";
// names and environments matched case-insensitively) and returns its canonical spelling, for
// Mint and the `manager token --role` flag.
func ParseRole(s string) (Role, error) {
	r, env, err := parseRole(s)
	if err != nil {
		return "", err
	}
	if env != "" {
		return EnvironmentOwnerOf(env), nil
	}
	return r, nil
}

// parseRole reads one claim value: a global role, or "EnvironmentOwner:<env>" which returns
// EnvironmentOwner and the canonical environment name.
func parseRole(s string) (role Role, env string, err error) {
	s = strings.TrimSpace(s)
	if name, e, ok := strings.Cut(s, ":"); ok {
		if !strings.EqualFold(name, string(EnvironmentOwner)) {
			return "", "", fmt.Errorf("unknown role %q: only EnvironmentOwner takes an environment", clip(s))
		}
		canon, ok := canonicalEnvironment(e)
		if !ok {
			return "", "", fmt.Errorf("unknown environment %q in role %q: want one of %s", clip(e), clip(s), strings.Join(Environments, ", "))
		}
		return EnvironmentOwner, canon, nil
	}
	for _, r := range []Role{Admin, Operator, Viewer} {
		if strings.EqualFold(s, string(r)) {
			return r, "", nil
		}
	}
	if strings.EqualFold(s, string(EnvironmentOwner)) {
		return "", "", fmt.Errorf("role %q needs an environment: EnvironmentOwner:<%s>", clip(s), strings.Join(Environments, "|"))
	}
	return "", "", fmt.Errorf("unknown role %q: want Admin, Operator, Viewer or EnvironmentOwner:<env>", clip(s))
}

func canonicalEnvironment(env string) (string, bool) {
	for _, e := range Environments {
		if strings.EqualFold(env, e) {
			return e, true
		}
	}
	return "", false
}

// clip keeps values read from tokens short in errors and logs.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
