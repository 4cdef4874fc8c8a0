// Package kustomize installs the control plane from the kustomize base (config/default) the
// way its kustomization tells a platform engineer to, `kubectl apply --server-side -k
// config/default`, on a simulated cluster of its own, runs its Deployment's container as a
// process (kwok runs no containers) and takes the examples to Ready.
package kustomize

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
)

func TestKustomizeBaseApplied(t *testing.T) {
	ctx := context.Background()
	root := testenv.RepoRoot()
	state, err := os.MkdirTemp("", "score-kustomize-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(state) })
	bin := filepath.Join(state, "score-controllers")
	build := exec.Command("go", "build", "-o", bin, "./cmd/score-controllers")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building score-controllers: %v\n%s", err, out)
	}
	cluster := &simcluster.Cluster{Root: root, Name: "score-kustomize-" + strconv.Itoa(os.Getpid()), Dir: state, Volumes: 8}
	if err := cluster.Up(); err != nil {
		t.Fatalf("starting the simulated cluster: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Down() })
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	// The install, as the kustomization's comment gives it.
	apply := exec.Command(filepath.Join(root, "bin", "kubectl"), "--kubeconfig", cluster.Kubeconfig(), "apply", "--server-side", "-k", "config/default")
	apply.Dir = root
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --server-side -k config/default: %v\n%s", err, out)
	}
	var d appsv1.Deployment
	testenv.Eventually(t, 2*time.Minute, "the score-controllers Deployment is Available", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "score-controllers"}, &d); err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 1 {
			return fmt.Errorf("%d available replicas", d.Status.AvailableReplicas)
		}
		return nil
	})
	p := controllerproc.Start(t, cfg, bin, state, &d, "")

	// The examples, as make dev applies them.
	const apps = "apps"
	names, err := devenv.ApplyExamples(ctx, c, os.DirFS(root), apps)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	if err := devenv.WaitReady(ctx, c, apps, 3*time.Minute, &progress); err != nil {
		var claims scorev1b1.ResourceClaimList
		_ = c.List(ctx, &claims, client.InNamespace(apps))
		for _, cl := range claims.Items {
			t.Logf("claim %s (%s): %s %s: %s", cl.Name, cl.Spec.Type, cl.Status.Phase, cl.Status.Reason, cl.Status.Message)
		}
		t.Fatalf("%v\n%s\n%s", err, progress.String(), p.LogTail())
	}
	t.Logf("%d Workloads of the examples Ready under the kustomize install", len(names))
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("score-controllers: %v\n%s", err, p.LogTail())
	}
}
