package chaos

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
)

// kind is the shape of a Workload in the rollout. Each is a web service with one port whose
// container reads its dependencies' outputs, plain and secret.
type kind int

const (
	// ownDatabase has its own postgres (Delete, the catalog default).
	ownDatabase kind = iota
	// retainedCache has its own redis with the Retain policy.
	retainedCache
	// sharedDatabase shares one postgres per namespace (id "shared") with the others of its
	// kind there.
	sharedDatabase
	// both has its own redis (Delete) and the namespace's shared postgres.
	both
	kinds
)

func (k kind) String() string {
	return [...]string{"own-postgres", "retained-redis", "shared-postgres", "redis+shared-postgres"}[k]
}

// SharedID is the id every shared postgres of a namespace uses.
const SharedID = "shared"

// planned is one Workload of the rollout; placed ones select the backend that places them on
// the member clusters.
type planned struct {
	namespace, name string
	kind            kind
	placed          bool
}

// rollout spreads n Workloads over namespaces, the kinds in turn. With members, every other
// Workload is placed on them, but never a Retain one: a Retain instance a move leaves behind
// is let go of on its old cluster, listed by nothing, which the audit would rightly count.
func rollout(n, namespaces int, members bool) []planned {
	out := make([]planned, n)
	for i := range out {
		out[i] = planned{namespace: fmt.Sprintf("chaos-%d", i%namespaces), name: fmt.Sprintf("w%03d", i), kind: kind((i / namespaces) % int(kinds))}
		out[i].placed = members && out[i].kind != retainedCache && i%2 == 0
	}
	return out
}

// resources are the dependencies of a kind, by key.
func (k kind) resources() map[string]scorev1b1.Resource {
	postgres := scorev1b1.Resource{Type: "postgres"}
	shared := scorev1b1.Resource{Type: "postgres", ID: ptr.To(SharedID)}
	redis := scorev1b1.Resource{Type: "redis"}
	retained := scorev1b1.Resource{Type: "redis", Metadata: &apiextensionsv1.JSON{Raw: []byte(`{"annotations":{"` + scorev1b1.AnnotationDeprovisionPolicy + `":"Retain"}}`)}}
	switch k {
	case ownDatabase:
		return map[string]scorev1b1.Resource{"db": postgres}
	case retainedCache:
		return map[string]scorev1b1.Resource{"cache": retained}
	case sharedDatabase:
		return map[string]scorev1b1.Resource{"db": shared}
	default:
		return map[string]scorev1b1.Resource{"db": shared, "cache": redis}
	}
}

func (p planned) workload() *scorev1b1.Workload {
	res := p.kind.resources()
	vars := map[string]string{"MODE": p.kind.String()}
	for key, r := range res {
		switch r.Type {
		case "postgres":
			vars["DB_HOST"] = "${resources." + key + ".host}"
			vars["DB_PASSWORD"] = "${resources." + key + ".password}"
		case "redis":
			vars["CACHE_HOST"] = "${resources." + key + ".host}"
			vars["CACHE_PASSWORD"] = "${resources." + key + ".password}"
		}
	}
	var labels map[string]string
	if p.placed {
		labels = map[string]string{devenv.MembersLabel: "members"}
	}
	return &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, Labels: labels},
		Spec: scorev1b1.WorkloadSpec{
			Containers: map[string]scorev1b1.Container{"main": {Image: "nginx:1.27", Variables: vars}},
			Service:    &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80, TargetPort: ptr.To(int32(8080))}}},
			Resources:  res,
		},
	}
}
