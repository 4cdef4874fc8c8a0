package placed

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
)

// Placing Workloads into a new namespace on a member, several at once, some with a dependency
// provisioned next to them (the provisioner places into the namespace first) and some without
// (the runtime does), is never refused there: the namespace and the identity's RoleBinding are
// created once each, and no write of the controllers is answered AlreadyExists (or anything
// else 4xx), as on the hub. Workers that each create the namespace and the RoleBinding they
// have just seen missing, and a runtime that creates the RoleBinding the provisioner created,
// would make 3-14 rejected writes per member in a benchmark run of 200.
func TestPlacingIntoANewNamespaceIsNeverRefused(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	const n = 6
	routes := 0
	for i := range n {
		name := fmt.Sprintf("web-%d", i)
		opts := []testenv.WorkloadOption{testenv.WithPort("http", 80)}
		if i%3 != 2 {
			routes++
			opts = append(opts, testenv.WithResource("route", "route",
				testenv.ResourceParams(fmt.Sprintf(`{"host":"%s.example.com","port":"http"}`, name))))
		}
		w := testenv.Workload(ns, name, opts...)
		w.Labels = map[string]string{"placement": "members"}
		testenv.Create(t, env.Client, w)
	}
	testenv.Eventually(t, 3*time.Minute, "every Workload's Deployment and route on the member", func() error {
		var deployments appsv1.DeploymentList
		if err := member.Client.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
			return err
		}
		var ingresses networkingv1.IngressList
		if err := member.Client.List(ctx, &ingresses, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(deployments.Items) != n || len(ingresses.Items) != routes {
			return fmt.Errorf("%d Deployments of %d, %d Ingresses of %d", len(deployments.Items), n, len(ingresses.Items), routes)
		}
		return nil
	})

	created := map[string]int{}
	var refused []string
	for _, e := range controllerproc.ReadAudit(t, memberAudit) {
		ref := e.ObjectRef
		if ref.Namespace != ns && !(ref.Resource == "namespaces" && ref.Name == ns) {
			continue
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		if code >= 400 {
			refused = append(refused, fmt.Sprintf("%s %s %s/%s by %s: %d", e.Verb, ref.Resource, ref.Namespace, ref.Name, e.User.Username, code))
		}
		if e.Verb == "create" && code < 300 && (ref.Resource == "namespaces" || ref.Resource == "rolebindings") {
			created[ref.Resource]++
		}
	}
	if len(refused) > 0 {
		t.Errorf("%d writes refused on the member:\n%s", len(refused), strings.Join(refused, "\n"))
	}
	if created["namespaces"] != 1 || created["rolebindings"] != 1 {
		t.Errorf("created on the member: %v, want the namespace and its RoleBinding once each", created)
	}
}
