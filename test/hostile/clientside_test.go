package hostile

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// kubectl apply (client-side) records the whole Workload in the annotation
// kubectl.kubernetes.io/last-applied-configuration; were that annotation checked, every Workload
// so applied whose variables or files hold 🔐 or 💬 would be refused. Mallory applies one with
// kubectl, its variable and file spelling her colleague owner's database password as a secret
// reference, and a dependency whose definition runs with her Workload's metadata. It is Ready —
// the record reaches no definition — and the reference is text: nothing of hers holds the
// password.
func TestHostileClientSideApplyShowsNoDefinitionItsVariables(t *testing.T) {
	secret, _ := ownerDatabase(t)
	password := secretValue(t, teamA, secret, "password")
	const name = "thief-kubectl"
	ref := "🔐💬" + secret + "_password💬🔐"
	manifest := `apiVersion: score.dev/v1b1
kind: Workload
metadata: {namespace: ` + teamA + `, name: ` + name + `}
spec:
  containers:
    main:
      image: nginx
      variables: {STOLEN: "` + ref + `", URL: "${resources.owner.url}"}
      files:
        /etc/stolen: {content: "` + ref + `"}
  service: {ports: {http: {port: 80}}}
  resources:
    owner: {type: endpoint, params: {path: /health}}
`
	kubectl := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "kubectl"), "--kubeconfig", kubeconfig,
		"--as", mallory, "--as-group", "system:authenticated", "apply", "-f", "-")
	kubectl.Stdin = strings.NewReader(manifest)
	if out, err := kubectl.CombinedOutput(); err != nil {
		t.Fatalf("mallory's kubectl apply: %v\n%s", err, out)
	}
	w := &scorev1b1.Workload{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the controllers' log ends:\n%s", controllers.LogTail())
		}
		_ = tenant.Delete(ctx, w)
	})
	if err := tenant.Get(ctx, client.ObjectKey{Namespace: teamA, Name: name}, w); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.Annotations[corev1.LastAppliedConfigAnnotation], ref) {
		t.Fatalf("kubectl recorded no last applied configuration with the variable: %v", w.Annotations)
	}

	ready(t, teamA, name, 2*time.Minute)
	var deployments appsv1.DeploymentList
	if err := admin.List(ctx, &deployments, client.InNamespace(teamA), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil || len(deployments.Items) != 1 {
		t.Fatalf("mallory's Deployment: %d (%v)", len(deployments.Items), err)
	}
	stolen := ""
	for _, e := range deployments.Items[0].Spec.Template.Spec.Containers[0].Env {
		if e.Name == "STOLEN" {
			stolen = e.Value
		}
	}
	if stolen != ref {
		t.Fatalf("the variable is %q, want the text %q", stolen, ref)
	}
	// Nothing made since the victims settled (theirs hold the password rightly) holds it.
	var secrets corev1.SecretList
	var configMaps corev1.ConfigMapList
	for _, l := range []client.ObjectList{&secrets, &configMaps} {
		if err := admin.List(ctx, l, client.InNamespace(teamA)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			if _, victims := untouched["*v1.Secret "+s.Name]; !victims && contains(password, v) {
				t.Fatalf("Secret %s holds the password", s.Name)
			}
		}
	}
	for _, cm := range configMaps.Items {
		for _, v := range cm.Data {
			if _, victims := untouched["*v1.ConfigMap "+cm.Name]; !victims && contains(password, []byte(v)) {
				t.Fatalf("ConfigMap %s holds the password", cm.Name)
			}
		}
	}
	othersUntouched(t)
}
