// Package members tests member-cluster registrations on a real kube-apiserver and etcd: the
// runtime's pool of connections reading hostile registrations on the hub, and the identity
// `scorectl cluster add` creates on a member (a second API server of its own), confined to
// the namespaces the hub places into.
package members

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/apply"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// controlPlane is the hub's control-plane namespace, where the registrations are.
const controlPlane = "score-system"

var (
	env  *testenv.Env
	ctx  = context.Background()
	pool *members.Pool
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		if err := testenv.CreateAll(ctx, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}}); err != nil {
			return err
		}
		mgr, err := ctrl.NewManager(env.Config, testenv.ManagerOptions())
		if err != nil {
			return err
		}
		// The runtime's pool, as the runtime sets it up, publishing score-clusters.
		pool = &members.Pool{Name: "cluster", Namespace: controlPlane, Hub: mgr.GetClient(), HubReader: mgr.GetAPIReader(), HubConfig: &rest.Config{UserAgent: "members-test", QPS: -1},
			Scope: scorev1b1.LabelWorkload, Publish: true, Changed: func(context.Context, string) {},
			NewApplier: func(_, _ string, c client.Client, _ cache.Cache) *apply.Applier {
				return &apply.Applier{Client: c, FieldManager: scorev1b1.FieldManagerRuntime}
			}}
		if err := pool.Setup(mgr); err != nil {
			return err
		}
		go func() { _ = mgr.Start(ctx) }()
		return nil
	}))
}
