package provisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestOwnsOutputsSecret(t *testing.T) {
	c := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-db-1234abcd", UID: "uid-now"}}
	controller := func(apiVersion, kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: k8stypes.UID("uid-" + uid), Controller: ptr.To(true)}}
	}
	cases := []struct {
		name   string
		owners []metav1.OwnerReference
		typ    corev1.SecretType
		want   bool
	}{
		{"controlled by the claim", controller("score.dev/v1b1", "ResourceClaim", c.Name, "now"), corev1.SecretTypeOpaque, true},
		{"controlled by an earlier claim of its name", controller("score.dev/v1b1", "ResourceClaim", c.Name, "before"), corev1.SecretTypeOpaque, true},
		{"no owner", nil, corev1.SecretTypeOpaque, false},
		{"owned, not controlled, by the claim", []metav1.OwnerReference{{APIVersion: "score.dev/v1b1", Kind: "ResourceClaim", Name: c.Name, UID: c.UID}}, corev1.SecretTypeOpaque, false},
		{"controlled by a claim of another name", controller("score.dev/v1b1", "ResourceClaim", "other", "other"), corev1.SecretTypeOpaque, false},
		{"controlled by another kind of its name", controller("v1", "ConfigMap", c.Name, "cm"), corev1.SecretTypeOpaque, false},
		{"controlled by a ResourceClaim of another group", controller("example.com/v1", "ResourceClaim", c.Name, "x"), corev1.SecretTypeOpaque, false},
		{"an earlier claim's, of another type", controller("score.dev/v1b1", "ResourceClaim", c.Name, "before"), corev1.SecretTypeDockerConfigJson, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: scorev1b1.OutputsSecretName(c.Name), OwnerReferences: tc.owners}, Type: tc.typ}
			if got := ownsOutputsSecret(c, s); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
