package engine

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// env is a full control plane (controller-manager, scheduler, kwok): one cluster whose operator
// Deployments become Available.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Full, func(e *testenv.Env) { env = e }) }

// single is the full control plane as a deployment target.
func single(t *testing.T) server {
	return server{Kubeconfig: kubeconfigOf(t, env), Config: env.Config}
}
