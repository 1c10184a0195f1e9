package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// MinSecretBytes is the shortest HS256 secret accepted (RFC 7518 3.2: at least the hash size).
const MinSecretBytes = 32

// MintIssuer is the iss claim Mint writes; set Options.Issuer to it to accept only minted tokens.
const MintIssuer = "slipway-manager"

type hs256 struct {
	*core
	secret []byte
	parser *jwt.Parser
}

// NewHS256 verifies HS256 tokens signed with secret (at least 32 bytes). No other algorithm is
// accepted: an RS256, ES256 or "none" token is refused before the secret is used.
func NewHS256(secret []byte, opts Options) (Verifier, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("auth: HS256 secret is %d bytes; it must be at least %d", len(secret), MinSecretBytes)
	}
	c, err := newCore([]string{"HS256"}, opts)
	if err != nil {
		return nil, err
	}
	return &hs256{
		core:   c,
		secret: append([]byte(nil), secret...),
		// Claims are validated by core after the signature, so every verifier maps them alike.
		parser: jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithoutClaimsValidation()),
	}, nil
}

func (v *hs256) Verify(ctx context.Context, raw string) (*Identity, error) {
	if raw == "" {
		return nil, ErrNoToken
	}
	if _, err := v.checkHeader(raw); err != nil {
		return nil, err
	}
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		if t.Method != jwt.SigningMethodHS256 {
			return nil, errors.New("unexpected method")
		}
		return v.secret, nil
	})
	if err != nil {
		if errors.Is(err, jwt.ErrTokenMalformed) {
			return nil, tokenError(ReasonMalformed)
		}
		return nil, tokenError(ReasonSignature)
	}
	return v.identity(ctx, claims)
}
