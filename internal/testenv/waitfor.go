package testenv

import (
	"context"
	"errors"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitFor reads the object at key from c into a fresh PT until cond holds, and returns that
// object. On timeout the test fails with what and, when describe is given, its account of the
// last object read (a status summary), else the last read error.
func WaitFor[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, t testing.TB, c client.Reader, key client.ObjectKey, what string, cond func(PT) bool, describe ...func(PT) string) PT {
	t.Helper()
	var last PT
	Eventually(ctx, t, what, func() (bool, error) {
		last = new(T)
		if err := c.Get(ctx, key, last); err != nil {
			return false, err
		}
		if cond(last) {
			return true, nil
		}
		if len(describe) > 0 {
			return false, errors.New(describe[0](last))
		}
		return false, nil
	})
	return last
}
