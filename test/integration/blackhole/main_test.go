// Package blackhole runs the runtime against a hub and two member clusters, each a real
// kube-apiserver and etcd of its own, one of them reached through a TCP proxy that can stop
// forwarding without closing or refusing anything: a member that silently drops packets must
// cost the other member nothing.
package blackhole

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	runtimectl "github.com/score-orchestrator/score-orchestrator/internal/controller/runtime"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/templates"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// controlPlane is the hub's control-plane namespace, where the registrations are.
const controlPlane = "score-system"

// workers is the runtime's: few, so that a member holding them would hold every plan.
const workers = 2

var (
	env *testenv.Env
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	// A silent member is noticed by the probe within seconds here. A request to a member
	// times out only after ten minutes: nothing the Workloads on the other member are held
	// to can be the request timeout.
	members.ProbeInterval, members.ProbeTimeout, members.RequestTimeout = time.Second, 2*time.Second, 10*time.Minute
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		if err := testenv.CreateAll(ctx, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}}); err != nil {
			return err
		}
		mgr, err := ctrl.NewManager(env.Config, testenv.ManagerOptions())
		if err != nil {
			return err
		}
		config, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
		if err != nil {
			return err
		}
		store := configsource.NewStore()
		if _, err := store.Offer("1", config); err != nil {
			return err
		}
		r := &runtimectl.Reconciler{Client: mgr.GetClient(), Templates: &templates.Source{Reader: mgr.GetAPIReader()}, Config: store,
			Namespace: controlPlane, Concurrency: workers}
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
		go func() { _ = mgr.Start(ctx) }()
		return nil
	}))
}
