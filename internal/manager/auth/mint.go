package auth

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Mint signs an HS256 token for subject with roles (claim "roles"; use EnvironmentOwnerOf for
// an environment owner), valid from now for ttl, issued by MintIssuer. For `manager token` and
// tests. Unknown roles are an error here, unlike in Verify.
func Mint(secret []byte, subject string, roles []Role, ttl time.Duration, now time.Time) (string, error) {
	if len(secret) < MinSecretBytes {
		return "", fmt.Errorf("auth: HS256 secret is %d bytes; it must be at least %d", len(secret), MinSecretBytes)
	}
	if strings.TrimSpace(subject) == "" {
		return "", errors.New("auth: token subject is empty")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("auth: token lifetime %s must be positive", ttl)
	}
	names := make([]string, 0, len(roles))
	for _, r := range roles {
		role, env, err := parseRole(string(r))
		if err != nil {
			return "", fmt.Errorf("auth: %w", err)
		}
		if env != "" {
			names = append(names, string(EnvironmentOwnerOf(env)))
		} else {
			names = append(names, string(role))
		}
	}
	claims := jwt.MapClaims{
		"iss":            MintIssuer,
		"sub":            subject,
		"iat":            now.Unix(),
		"nbf":            now.Unix(),
		"exp":            now.Add(ttl).Unix(),
		DefaultRoleClaim: names,
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}
