// Package upgrade installs the previous release (hack/previous-release: its CRDs, its chart,
// its controllers built from the clone's history) on a simulated cluster of its own, brings a
// fleet to Ready under it, and upgrades the control plane to this commit under the running
// fleet — CRDs first, then the chart, then the controllers, as docs/upgrading.md tells a
// platform team. What a platform team is promised is checked on the way: every Workload stays
// Ready (sampled every few hundred milliseconds; the one cause that may take one out while the
// upgrade's config rollout goes through is named in knownNotReady), nothing the fleet owns is
// created again or loses its credentials, only the pods the changelog names restart, the new
// controllers' writes are bounded and then stop, and what the previous release stored reads
// back unchanged through this commit's CRDs and types. Then a rollback to the previous
// release, by helm rollback and by helm upgrade with its chart, is refused before anything
// changes (the chart's downgrade guard), and the fleet stays Ready.
//
// kwok runs no containers: each controller Deployment's container runs here as a process of
// the release's score-controllers binary (internal/testing/testenv/controllerproc), under its
// ServiceAccount's token, as test/helm runs this commit's.
package upgrade

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/previousrelease"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	ctx = context.Background()
	// state is the package's scratch directory; kubeconfig the cluster administrator's.
	state, kubeconfig string
	cluster           *simcluster.Cluster
	cfg               *rest.Config
	c                 client.Client
	// previous and current are the two releases: the one hack/previous-release names, and
	// this commit.
	previous, current *release
)

func TestMain(m *testing.M) {
	os.Exit(testenv.SimulatedMain(m, testenv.Simulated{Name: "score-upgrade", Clusters: map[string]testenv.ClusterSpec{"": {Volumes: 16, AuditWrites: true}}}, setup))
}

// setup keeps the cluster and builds both releases' controllers: the previous one from the
// clone's history (cached by commit), this one from the working tree.
func setup(env *testenv.SimulatedEnv) (func(), error) {
	k := env.Clusters[""]
	state, cluster, kubeconfig, cfg, c = env.State, k.Cluster, k.Kubeconfig(), k.Config, k.Client
	prev, err := previousrelease.Checkout(env.Root)
	if err != nil {
		return nil, err
	}
	prevBin, err := prev.Build("score-controllers")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(state, "score-controllers")
	build := exec.Command("go", "build", "-o", bin, "./cmd/score-controllers")
	build.Dir = env.Root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building score-controllers: %v\n%s", err, out)
	}
	previous = &release{name: "previous (" + prev.Commit[:7] + ")", root: prev.Dir, controllers: prevBin}
	current = &release{name: "this commit", root: env.Root, controllers: bin}
	return func() {
		if running != nil {
			_ = running.Stop(30 * time.Second)
		}
		if keep := os.Getenv("SCORE_UPGRADE_LOGS"); keep != "" {
			_ = exec.Command("sh", "-c", "mkdir -p "+keep+" && cp -r "+state+"/controllers-* "+keep+"/").Run()
		}
	}, nil
}
