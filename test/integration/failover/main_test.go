// Package failover tests placement.failover on real API servers: a hub running the
// controllers (in this process) and two member clusters, each a kube-apiserver and etcd of its
// own, each reached through a TCP proxy that goes dark (it accepts and reads, forwards nothing,
// closes nothing), as a member whose network drops packets.
package failover

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/blackhole"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const controlPlane = "score-system"

var (
	env *testenv.Env
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	// A member is probed every second here, and a Workload may fail over after seconds: the
	// rules are the same at any scale, only the waits are shorter.
	members.ProbeInterval, members.ProbeTimeout, members.RequestTimeout = time.Second, 2*time.Second, 5*time.Second
	orchconfig.MinFailoverAfter = time.Second
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		return testenv.CreateAll(ctx, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}})
	}))
}

// newProxy reaches a member's API server through a proxy that can go dark
// (internal/testing/blackhole), closed when the test ends, and returns it and its URL.
func newProxy(t *testing.T, server string) (*blackhole.Proxy, string) {
	t.Helper()
	p, url, err := blackhole.New(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, url
}
