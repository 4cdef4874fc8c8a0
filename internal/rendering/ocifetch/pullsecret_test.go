package ocifetch_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A registry that refuses anonymous pulls: without a pull secret the fetch says so, with the
// wrong credentials it names the Secret, with the right ones it succeeds, and a replaced
// Secret is used at the next fetch. No error holds the password.
func TestPrivateRegistry(t *testing.T) {
	reg := testenv.StartRegistry(t, "platform", "s3cret-pull-password")
	ref := reg.Push(t, "platform/templates", "application/vnd.score.dev.test.v1", "application/vnd.score.dev.test.v1+yaml", []byte("kind: Template\n"))
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "score-system", Name: "registry-pull"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfig("platform", "an-old-password")}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()

	anonymous := &ocifetch.Fetcher{PlainHTTP: true}
	_, err := anonymous.Fetch(ctx, ref, "application/vnd.score.dev.test.v1+yaml")
	if err == nil || !strings.Contains(err.Error(), "the registry "+reg.Host+" refused the pull (401 Unauthorized) anonymously: no registry pull secret is configured (--oci-pull-secret)") {
		t.Fatalf("anonymous pull: %v", err)
	}

	withSecret := &ocifetch.Fetcher{PlainHTTP: true, PullSecret: &ocifetch.PullSecret{Reader: c, Key: key}}
	_, err = withSecret.Fetch(ctx, ref, "application/vnd.score.dev.test.v1+yaml")
	if err == nil || !strings.Contains(err.Error(), "refused the pull (401 Unauthorized) with the credentials of Secret score-system/registry-pull") {
		t.Fatalf("a stale password: %v", err)
	}
	if strings.Contains(err.Error(), "an-old-password") {
		t.Fatalf("the error holds the password: %v", err)
	}

	// The Secret is replaced (rotated); the next fetch uses it, no restart.
	secret.Data[corev1.DockerConfigJsonKey] = reg.DockerConfig("platform", "s3cret-pull-password")
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	r, err := withSecret.Fetch(ctx, ref, "application/vnd.score.dev.test.v1+yaml")
	if err != nil || string(r.Data) != "kind: Template\n" {
		t.Fatalf("after the rotation: %v %q", err, r.Data)
	}

	for name, data := range map[string][]byte{"not a docker config": []byte("s3cret-pull-password"), "": nil} {
		secret.Data = map[string][]byte{}
		if data != nil {
			secret.Data[corev1.DockerConfigJsonKey] = data
		}
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		_, err := withSecret.Fetch(ctx, ref, "application/vnd.score.dev.test.v1+yaml")
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "registry pull secret score-system/registry-pull") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
