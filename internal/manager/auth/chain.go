package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Algorithmic is a verifier that says which "alg" values it accepts. Every verifier of this
// package is one.
type Algorithmic interface {
	Verifier
	Algorithms() []string
}

type chain struct{ vs []Algorithmic }

// Chain accepts tokens any of vs accepts (HS256 and OIDC at once). A token goes only to the
// verifiers whose pinned algorithms include its "alg", tried in order; the first acceptance wins,
// else the first refusal is returned. The token's header selects among verifiers but never
// changes the algorithm a verifier checks with.
func Chain(vs ...Verifier) (Verifier, error) {
	if len(vs) == 0 {
		return nil, errors.New("auth: chain of no verifiers")
	}
	c := &chain{}
	for i, v := range vs {
		a, ok := v.(Algorithmic)
		if !ok || len(a.Algorithms()) == 0 {
			return nil, fmt.Errorf("auth: chain: verifier %d (%T) does not say which algorithms it accepts", i, v)
		}
		c.vs = append(c.vs, a)
	}
	if len(c.vs) == 1 {
		return c.vs[0], nil
	}
	return c, nil
}

func (c *chain) Algorithms() []string {
	var out []string
	for _, v := range c.vs {
		for _, a := range v.Algorithms() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

func (c *chain) Verify(ctx context.Context, raw string) (*Identity, error) {
	if raw == "" {
		return nil, ErrNoToken
	}
	h, err := readHeader(raw)
	if err != nil {
		return nil, err
	}
	var first error
	for _, v := range c.vs {
		if !slices.Contains(v.Algorithms(), h.Alg) {
			continue
		}
		id, err := v.Verify(ctx, raw)
		if err == nil {
			return id, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return nil, tokenError(ReasonAlgorithm)
	}
	return nil, first
}
