package provisioner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// appsHome is the namespace whose Workloads the app-service type shares with the namespaces
// labelled apps=yes.
const appsHome = "apps-home"

// catalogServices is the development catalog's service definition as shipped, and the same
// definition as a platform shares it across namespaces (type app-service), indented as items of
// the config's provisioners list.
func catalogServices() (string, error) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "provisioners", "service.yaml"))
	if err != nil {
		return "", err
	}
	shipped := string(data)
	shared := strings.Replace(strings.Replace(shipped, "uri: template://score-dev/service", "uri: template://test/app-service", 1),
		"  type: service\n", "  type: app-service\n  sharing: {namespace: "+appsHome+", namespaceSelector: {matchLabels: {apps: \"yes\"}}, otherwise: Deny}\n", 1)
	if shared == shipped || !strings.Contains(shared, "sharing:") {
		return "", fmt.Errorf("config/provisioners/service.yaml changed shape: the test cannot derive its shared variant")
	}
	var b strings.Builder
	for _, line := range strings.Split(shipped+shared, "\n") {
		if line != "" {
			b.WriteString("  " + line + "\n")
		}
	}
	return b.String(), nil
}

// waitMessage waits until the claim is in the phase with the message.
func waitMessage(t *testing.T, c *scorev1b1.ResourceClaim, phase scorev1b1.ClaimPhase, message string) *scorev1b1.ResourceClaim {
	t.Helper()
	return waitClaim(t, c, fmt.Sprintf("%s: %s", phase, message), func(out *scorev1b1.ResourceClaim) bool {
		return out.Status.Phase == phase && out.Status.Message == message
	})
}

// A Workload that depends on another through the catalog's service type: a target that does
// not exist yet, or publishes no port, is waited for with the reason (Binding, never Failed);
// the target's creation and change bring the claim back, and its outputs say how to reach the
// target's Service: the port a person would call (http), and every port by name and number,
// as score-k8s's workload services list them.
func TestServiceOfAnotherWorkload(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	c := newClaim(ns, "web-backend", "web", "backend", "service", "", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	waitMessage(t, c, scorev1b1.ClaimPhaseBinding, fmt.Sprintf("Waiting for workload backend to be deployed in namespace %s.", ns))

	backend := testenv.Workload(ns, "backend")
	testenv.Create(t, env.Client, backend)
	waitMessage(t, c, scorev1b1.ClaimPhaseBinding, "Waiting for workload backend to publish a port (service.ports).")

	backend.Spec.Service = &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"admin": {Port: 9000}, "http": {Port: 8080}}}
	if err := env.Client.Update(ctx, backend); err != nil {
		t.Fatal(err)
	}
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	want := fmt.Sprintf(`{"host":"backend.%s.svc.cluster.local","name":"backend","port":8080,"ports":{"8080":8080,"9000":9000,"admin":9000,"http":8080}}`, ns)
	if got := string(c.Status.Outputs.Raw); got != want {
		t.Fatalf("outputs %s, want %s", got, want)
	}
	if c.Status.SecretRef != nil || len(c.Status.Resources) != 0 {
		t.Fatalf("a service claim creates nothing: secret %v, resources %v", c.Status.SecretRef, c.Status.Resources)
	}
}

// Where the platform shares the type across namespaces, the id names a Workload of the
// sharing namespace: a consumer in a namespace it selects waits for that Workload and then
// reaches its Service there; a consumer in another namespace is refused.
func TestServiceSharedAcrossNamespaces(t *testing.T) {
	for _, n := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: appsHome}},
		{ObjectMeta: metav1.ObjectMeta{Name: "apps-shop", Labels: map[string]string{"apps": "yes"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "apps-other"}},
	} {
		testenv.Create(t, env.Client, n)
	}
	c := newClaim("apps-shop", "frontend-catalog", "frontend", "catalog", "app-service", "catalog", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, c)
	waitMessage(t, c, scorev1b1.ClaimPhaseBinding, "Waiting for workload catalog to be deployed in namespace "+appsHome+".")

	// The Workload of the sharing namespace brings the consumer's claim back.
	testenv.Create(t, env.Client, testenv.Workload(appsHome, "catalog", testenv.WithPort("grpc", 3550)))
	c = waitPhase(t, c, scorev1b1.ClaimPhaseBound)
	if want := `{"host":"catalog.apps-home.svc.cluster.local","name":"catalog","port":3550,"ports":{"3550":3550,"grpc":3550}}`; string(c.Status.Outputs.Raw) != want {
		t.Fatalf("outputs %s, want %s", c.Status.Outputs.Raw, want)
	}
	if c.Status.InstanceNamespace != appsHome {
		t.Fatalf("instance namespace %q", c.Status.InstanceNamespace)
	}

	other := newClaim("apps-other", "x-catalog", "x", "catalog", "app-service", "catalog", scorev1b1.DeprovisionDelete)
	testenv.Create(t, env.Client, other)
	if other = waitPhase(t, other, scorev1b1.ClaimPhaseFailed); other.Status.Reason != scorev1b1.ReasonPermissionDenied || other.Status.Outputs != nil {
		t.Fatalf("a namespace the platform does not select is refused: %+v", other.Status)
	}
}
