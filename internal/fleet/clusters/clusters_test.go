package clusters

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestDigestAndLabels(t *testing.T) {
	a := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{scorev1b1.LabelSecretType: scorev1b1.SecretTypeCluster, "region": "eu"}},
		Data: map[string][]byte{KeyServer: []byte("s"), KeyToken: []byte("t1")}}
	b := a.DeepCopy()
	b.Data[KeyToken] = []byte("t2")
	if Digest(a) == Digest(b) {
		t.Fatal("a rotated token keeps the digest")
	}
	if l := Labels(a); len(l) != 1 || l["region"] != "eu" {
		t.Fatalf("labels %v", l)
	}
}

func TestOfPlan(t *testing.T) {
	p := &scorev1b1.WorkloadPlan{Spec: scorev1b1.WorkloadPlanSpec{Cluster: "us"}, Status: scorev1b1.WorkloadPlanStatus{Objects: []scorev1b1.AppliedObject{
		{Cluster: "eu", Kind: "Deployment"}, {Cluster: "eu", Kind: "Service"}, {Kind: "Namespace"}, {Cluster: "us", Kind: "Deployment"}}}}
	if got := OfPlan(p); strings.Join(got, ",") != "us,eu," {
		t.Fatalf("%q, want us, eu and the hub", got)
	}
}
