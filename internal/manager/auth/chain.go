package auth

import (
	"context"
	"errors"
	"slices"
)

// Algorithmic is a verifier that says which "alg" values it accepts. Every verifier of this
// package is one.
type Algorithmic interface {
	Verifier
	Algorithms() []string
}

type chain struct {
	routed []Algorithmic // tried when their algorithms include the token's
	other  []Verifier    // verifiers that do not say: tried for every token, after the routed ones
}

// Chain accepts tokens any of vs accepts (HS256 and OIDC at once). A token goes only to the
// verifiers whose pinned algorithms include its "alg" (every verifier of this package says which
// it accepts), tried in order; the first acceptance wins, else the first refusal is returned. The
// token's header selects among verifiers but never changes the algorithm a verifier checks with.
// A chain of one verifier is that verifier.
func Chain(vs ...Verifier) Verifier {
	if len(vs) == 1 {
		return vs[0]
	}
	c := &chain{}
	for _, v := range vs {
		if a, ok := v.(Algorithmic); ok {
			c.routed = append(c.routed, a)
		} else if v != nil {
			c.other = append(c.other, v)
		}
	}
	return c
}

func (c *chain) Algorithms() []string {
	var out []string
	for _, v := range c.routed {
		for _, a := range v.Algorithms() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// errNoVerifier is a chain built from nothing: a configuration error, so not a 401.
var errNoVerifier = errors.New("auth: no token verifier is configured")

func (c *chain) Verify(ctx context.Context, raw string) (*Identity, error) {
	if raw == "" {
		return nil, ErrNoToken
	}
	if len(c.routed)+len(c.other) == 0 {
		return nil, errNoVerifier
	}
	h, err := readHeader(raw)
	if err != nil {
		return nil, err
	}
	var first error
	try := func(v Verifier) *Identity {
		id, err := v.Verify(ctx, raw)
		if err == nil {
			return id
		}
		if first == nil {
			first = err
		}
		return nil
	}
	for _, v := range c.routed {
		if slices.Contains(v.Algorithms(), h.Alg) {
			if id := try(v); id != nil {
				return id, nil
			}
		}
	}
	for _, v := range c.other {
		if id := try(v); id != nil {
			return id, nil
		}
	}
	if first == nil {
		return nil, tokenError(ReasonAlgorithm)
	}
	return nil, first
}
