package permission

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// networkPolicy is a template of a kind the default allowedKinds lets templates create but
// the runtime's generated role does not grant (only the provisioner creates NetworkPolicies).
const networkPolicy = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
spec:
  podSelector: {}
`

// A template that renders a kind the runtime's role does not grant fails the plan as
// PermissionDenied at once. The runtime reads an object of a kind it has not seen from the API
// server, whose refusal it reports, before it watches the kind: watching first waited
// forever for a watch the role refuses, and held every plan of the process behind it.
func TestRuntimeRefusalIsPermissionDenied(t *testing.T) {
	env := testenv.StartForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	if _, err := devenv.Install(ctx, c, os.DirFS(testenv.RepoRoot())); err != nil {
		t.Fatal(err)
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = serviceAccount("score-runtime")
	opts := controlplane.DefaultOptions()
	opts.Controllers = []string{controlplane.Runtime}
	mopts := testenv.ManagerOptions()
	// The package's other test runs a config source's controller of the same name.
	mopts.Controller = ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	p := &scorev1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: "web"},
		Spec: scorev1b1.WorkloadPlanSpec{
			WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: "u-web"}, ObservedWorkloadGeneration: 1,
			RuntimeClass: "kubernetes", BackendID: "k8s-web",
			Template: scorev1b1.TemplateRef{Kind: scorev1b1.TemplateManifests, Ref: "configmap://" + teamNamespace + "/templates/np.yaml",
				Digest: testenv.Digest(networkPolicy)},
			Values:     &apiextensionsv1.JSON{Raw: []byte(`{"containers":{"main":{"image":"nginx"}}}`)},
			Projection: scorev1b1.Projection{Containers: []scorev1b1.ContainerProjection{{Name: "main"}}},
		},
	}
	testenv.Create(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamNamespace}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: "templates"}, Data: map[string]string{"np.yaml": networkPolicy}},
		p,
	)
	testenv.Eventually(t, 20*time.Second, "the plan failed as PermissionDenied", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Status.Phase != scorev1b1.PlanPhaseFailed || p.Status.Reason != scorev1b1.ReasonPermissionDenied {
			return fmt.Errorf("status %s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		return nil
	})
	t.Log(p.Status.Message)
}
