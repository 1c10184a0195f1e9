package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/golang-jwt/jwt/v5"
)

// OIDCAlgorithms are the algorithms accepted from an OIDC issuer.
var OIDCAlgorithms = []string{"RS256", "ES256"}

type oidcVerifier struct {
	*core
	keys *oidc.RemoteKeySet
}

// NewOIDC discovers issuerURL (its /.well-known/openid-configuration, whose "issuer" must equal
// issuerURL) and verifies RS256 and ES256 tokens against its JWKS. Keys are cached and fetched
// again when a token names a key id not in the cache, so key rotation at the issuer is picked up.
// audience is required and must be in each token's aud claim; iss must equal issuerURL (both
// override Options). ctx carries the HTTP client (oidc.ClientContext) and bounds discovery only.
func NewOIDC(ctx context.Context, issuerURL, audience string, opts Options) (Verifier, error) {
	if issuerURL == "" {
		return nil, fmt.Errorf("auth: OIDC issuer URL is empty")
	}
	if audience == "" {
		return nil, fmt.Errorf("auth: OIDC audience is empty: set the client id or API audience tokens are issued for")
	}
	opts.Issuer, opts.Audience = issuerURL, audience
	c, err := newCore(OIDCAlgorithms, opts)
	if err != nil {
		return nil, err
	}
	p, err := oidc.NewProvider(ctx, issuerURL)
	if err != nil {
		return nil, fmt.Errorf("auth: discover OIDC issuer %s: %w", issuerURL, err)
	}
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, fmt.Errorf("auth: read OIDC discovery document of %s: %w", issuerURL, err)
	}
	if meta.JWKSURI == "" {
		return nil, fmt.Errorf("auth: OIDC issuer %s has no jwks_uri in its discovery document", issuerURL)
	}
	return &oidcVerifier{core: c, keys: oidc.NewRemoteKeySet(ctx, meta.JWKSURI)}, nil
}

func (v *oidcVerifier) Verify(ctx context.Context, raw string) (*Identity, error) {
	if raw == "" {
		return nil, ErrNoToken
	}
	// The algorithm is pinned here, before the key set sees the token: an HS256 token made with
	// the issuer's public key as its secret never reaches a key.
	if _, err := v.checkHeader(raw); err != nil {
		return nil, err
	}
	payload, err := v.keys.VerifySignature(ctx, raw)
	if err != nil && !strings.HasPrefix(err.Error(), "fetching keys") {
		// A key set that misses the token's key fetches the issuer's keys again, but a fetch
		// that has just finished is handed to new callers until its goroutine lets go of it
		// (go-oidc's RemoteKeySet): a token signed with a key published since then would be
		// checked against the old keys. Asking once more starts a fetch of its own.
		payload, err = v.keys.VerifySignature(ctx, raw)
	}
	if err != nil {
		if strings.HasPrefix(err.Error(), "fetching keys") {
			v.opts.Logger.WarnContext(ctx, "auth: Cannot fetch the OIDC issuer's signing keys", "issuer", v.opts.Issuer, "error", err)
			return nil, tokenError(ReasonKeysMissing)
		}
		return nil, tokenError(ReasonSignature)
	}
	// Claims come from the verified payload, never from a second parse of the raw string.
	claims := jwt.MapClaims{}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, tokenError(ReasonMalformed)
	}
	return v.identity(ctx, claims)
}
