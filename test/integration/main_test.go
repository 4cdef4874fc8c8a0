// Package integration holds tests that run against a real kube-apiserver and etcd.
package integration

import (
	"context"
	"os"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(_ context.Context, e *testenv.Env) error {
		env = e // no controllers: these tests judge what the API server accepts
		return nil
	}))
}
