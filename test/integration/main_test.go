// Package integration holds tests that run against a real kube-apiserver and etcd.
package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
