package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Verifier checks a raw token and returns who presented it. Errors are ErrNoToken or
// *TokenError for anything the caller did wrong; anything else is internal.
type Verifier interface {
	Verify(ctx context.Context, raw string) (*Identity, error)
}

// Options tune a verifier. The zero value is usable.
type Options struct {
	// RoleClaim names the claim roles are read from (default "roles"); see the package doc.
	RoleClaim string
	// Leeway is the clock skew allowed on exp, nbf and iat: 0 means DefaultLeeway; at most MaxLeeway.
	Leeway time.Duration
	// Audience, when set, must be in the token's aud claim.
	Audience string
	// Issuer, when set, must equal the token's iss claim.
	Issuer string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives a warning for each unknown role string (default slog.Default()).
	Logger *slog.Logger
}

// Leeway bounds.
const (
	DefaultLeeway = 30 * time.Second
	MaxLeeway     = 5 * time.Minute
)

// core is what every verifier shares once the signature is checked: claim validation and roles.
type core struct {
	algs      []string
	opts      Options
	validator *jwt.Validator
}

func newCore(algs []string, opts Options) (*core, error) {
	switch {
	case opts.Leeway < 0:
		return nil, fmt.Errorf("auth: leeway %s is negative", opts.Leeway)
	case opts.Leeway > MaxLeeway:
		return nil, fmt.Errorf("auth: leeway %s is more than the maximum %s", opts.Leeway, MaxLeeway)
	case opts.Leeway == 0:
		opts.Leeway = DefaultLeeway
	}
	if opts.RoleClaim == "" {
		opts.RoleClaim = DefaultRoleClaim
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	vopts := []jwt.ParserOption{
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(opts.Leeway),
		jwt.WithTimeFunc(opts.Now),
	}
	if opts.Audience != "" {
		vopts = append(vopts, jwt.WithAudience(opts.Audience))
	}
	if opts.Issuer != "" {
		vopts = append(vopts, jwt.WithIssuer(opts.Issuer))
	}
	return &core{algs: algs, opts: opts, validator: jwt.NewValidator(vopts...)}, nil
}

// Algorithms are the only "alg" header values this verifier accepts.
func (c *core) Algorithms() []string { return slices.Clone(c.algs) }

type joseHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Crit []string `json:"crit"`
}

// readHeader decodes a compact JWS header without trusting anything in it.
func readHeader(raw string) (joseHeader, error) {
	var h joseHeader
	if len(raw) > maxTokenBytes {
		return h, tokenError(ReasonTooLarge)
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return h, tokenError(ReasonMalformed)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return h, tokenError(ReasonMalformed)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, tokenError(ReasonMalformed)
	}
	return h, nil
}

// checkHeader refuses any algorithm but the pinned ones, before a key is looked at.
func (c *core) checkHeader(raw string) (joseHeader, error) {
	h, err := readHeader(raw)
	if err != nil {
		return h, err
	}
	if !slices.Contains(c.algs, h.Alg) {
		return h, tokenError(ReasonAlgorithm)
	}
	if len(h.Crit) > 0 {
		// No critical header extension is understood here (RFC 7515 4.1.11).
		return h, tokenError(ReasonMalformed)
	}
	return h, nil
}

// identity validates signed claims and reads the subject and roles.
func (c *core) identity(ctx context.Context, claims jwt.MapClaims) (*Identity, error) {
	if _, ok := claims["exp"]; !ok {
		return nil, tokenError(ReasonNoExpiry)
	}
	if err := c.validator.Validate(claims); err != nil {
		return nil, c.claimError(claims, err)
	}
	sub, err := claims.GetSubject()
	if err != nil || strings.TrimSpace(sub) == "" {
		return nil, tokenError(ReasonNoSubject)
	}
	id := &Identity{Subject: sub, Token: tokenInfo(claims)}
	for _, s := range c.roleStrings(claims) {
		r, env, err := parseRole(s)
		if err != nil {
			c.opts.Logger.WarnContext(ctx, "auth: Ignoring unknown role in token", "subject", clip(sub), "claim", c.opts.RoleClaim, "error", err)
			continue
		}
		id.addRole(r, env)
	}
	return id, nil
}

// tokenInfo reads the claims that name a validated token. A jti that is not a string is no id.
func tokenInfo(claims jwt.MapClaims) TokenInfo {
	var t TokenInfo
	t.Issuer, _ = claims["iss"].(string)
	t.ID, _ = claims["jti"].(string)
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		t.ExpiresAt = exp.UTC()
	}
	return t
}

func (c *core) claimError(claims jwt.MapClaims, err error) error {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return tokenError(ReasonExpired)
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return tokenError(ReasonNotYetValid)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return tokenError(ReasonIssuedLater)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return tokenError(ReasonIssuer)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return tokenError(ReasonAudience)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		if _, ok := claims["iss"]; !ok && c.opts.Issuer != "" {
			return tokenError(ReasonIssuer)
		}
		return tokenError(ReasonAudience)
	default:
		// Wrong claim types (a string exp, a number aud) and the like.
		return tokenError(ReasonClaims)
	}
}

// roleStrings reads the role claim: a list of strings or one string; anything else holds no role.
func (c *core) roleStrings(claims jwt.MapClaims) []string {
	v, ok := claims[c.opts.RoleClaim]
	if !ok && strings.Contains(c.opts.RoleClaim, ".") {
		v, ok = lookupPath(claims, strings.Split(c.opts.RoleClaim, "."))
	}
	if !ok {
		return nil
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			} else {
				c.opts.Logger.Warn("auth: Ignoring a role that is not a string", "claim", c.opts.RoleClaim)
			}
		}
		return out
	default:
		c.opts.Logger.Warn("auth: Role claim is not a list of strings; no roles", "claim", c.opts.RoleClaim)
		return nil
	}
}

func lookupPath(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}
