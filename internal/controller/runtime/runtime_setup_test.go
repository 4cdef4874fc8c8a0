package runtime

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The memory of refused plans is dropped for a plan that applies: it does not grow with
// refusals that ended otherwise than by the blocking object's deletion.
func TestBlockedForgetsAPlanThatApplied(t *testing.T) {
	var b blocked
	svc := blockingKey(schema.GroupKind{Kind: "Service"}, "team", "db")
	web, api := types.NamespacedName{Namespace: "team", Name: "web"}, types.NamespacedName{Namespace: "team", Name: "api"}
	b.add(svc, web)
	b.add(svc, api)
	b.clear(web)
	if got := b.take(svc); len(got) != 1 || got[0] != api {
		t.Fatalf("blocked by the Service: %v, want [team/api]", got)
	}
	b.add(svc, web)
	b.clear(web)
	if len(b.plans) != 0 {
		t.Fatalf("entries left: %v", b.plans)
	}
}
