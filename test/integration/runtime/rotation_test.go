package runtime

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A rotated secret output rolls the pods: rewriting the claim's outputs Secret changes the
// pods' secrets revision label (so the Deployment rolls out and the containers read the new
// value), and the label carries nothing of the value.
func TestRotatedSecretRollsThePods(t *testing.T) {
	text := templateText(t)
	ns := setup(t, text)
	outputs := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rot-db-outputs", Labels: map[string]string{scorev1b1.LabelWorkload: "rot"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: scorev1b1.GroupVersion.String(), Kind: "ResourceClaim", Name: "rot-db", UID: "claim-uid", Controller: ptr.To(true)}}},
		Data: map[string][]byte{"password": []byte("first-secret-value")},
	}
	testenv.Create(t, env.Client, outputs)
	p := newPlan(ns, "rot", "u10", testenv.Digest(text), `{"containers":{"main":{"image":"nginx"}},"resources":{"db":{"type":"postgres","outputs":{"host":"db"}}}}`)
	p.Spec.Claims = []scorev1b1.PlanClaim{{Key: "db", ClaimName: "rot-db", SecretName: "rot-db-outputs", SecretKeys: []string{"password"}}}
	testenv.Create(t, env.Client, p)
	revision := func() (string, error) {
		dep := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rot"}, dep); err != nil {
			return "", err
		}
		r := dep.Spec.Template.Labels[scorev1b1.LabelSecretsRevision]
		if r == "" {
			return "", fmt.Errorf("no revision label: %v", dep.Spec.Template.Labels)
		}
		return r, nil
	}
	var first string
	testenv.Eventually(t, 20*time.Second, "a revision", func() (err error) { first, err = revision(); return err })

	outputs.Data["password"] = []byte("rotated-secret-value")
	if err := env.Client.Update(ctx, outputs); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "a new revision", func() error {
		r, err := revision()
		if err == nil && r == first {
			err = fmt.Errorf("still %s", r)
		}
		return err
	})
}
