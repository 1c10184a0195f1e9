package shard_test

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// The package's tests share one light control plane (etcd and kube-apiserver).
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e })
}
