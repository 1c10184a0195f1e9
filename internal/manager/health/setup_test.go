package health

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// env is one full control plane (kwok pods) for the package.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Full, func(e *testenv.Env) { env = e }) }

var nsSeq atomic.Int32

// namespace creates a namespace of its own for a test.
func namespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("health-%d", nsSeq.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return name
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkUntil runs c.Check until cond holds for its result, and returns that result.
func checkUntil(t testing.TB, c *Checker, target Target, what string, cond func(Result) bool) Result {
	t.Helper()
	ctx := testCtx(t)
	var got Result
	testenv.Eventually(ctx, t, what, func() (bool, error) {
		var err error
		got, err = c.Check(ctx, "local", env.Config, target)
		if err != nil {
			t.Fatal(err)
		}
		return cond(got), fmt.Errorf("last result %+v", got)
	})
	return got
}

func hasMessage(ms []string, sub string) bool {
	for _, m := range ms {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}
