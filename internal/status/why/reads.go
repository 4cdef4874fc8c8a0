package why

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// What the trace reads beyond the Workload, its claims, plan and exposure: the objects in the
// way, which only the cluster can tell about. Next names the reads still to make, from what the
// trace knows so far; a reader (internal/cli/whyobserve) makes them and asks again, until Next
// names none or MaxReads were made. The trace is written from whatever was read: an object not
// read is described by what its inventory entry says.

// MaxReads bounds the requests a reader makes for one trace.
const MaxReads = 32

// The bounds of what one trace looks at.
const (
	// maxEntries are the inventory entries read, the first ones not Current.
	maxEntries = 8
	// podLimit bounds the pods listed for one workload object, shownPods those named.
	podLimit  = 5
	shownPods = 3
	// eventLimit bounds the events listed for one object.
	eventLimit = 20
	// quotaLimit bounds the ResourceQuotas listed in a namespace.
	quotaLimit = 10
	// maxVolumes are the volume claims read for one pod not scheduled.
	maxVolumes = 2
)

// Ref names one object.
type Ref struct {
	APIVersion, Kind, Namespace, Name string
}

// String is the kind and the namespaced name, as a person names the object.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// group is the API group of the reference's kind ("" for the core group).
func (r Ref) group() string {
	g, _, ok := strings.Cut(r.APIVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// List asks for the objects of a kind in a namespace that match selectors, up to Limit.
type List struct {
	// Labels and Fields are a label and a field selector, as kubectl takes them.
	Labels, Fields string
	Limit          int
}

// Read is one request of a reader: the object Ref names or, when List.Limit is set, a list of
// Ref's kind in Ref's namespace.
type Read struct {
	Ref  Ref
	List List
	// MetadataOnly reads the object's metadata and nothing else: whether a Secret exists,
	// never what it holds.
	MetadataOnly bool
}

// Result is what a read found.
type Result struct {
	// Objects are the object read, or those listed.
	Objects []*unstructured.Unstructured
	// Missing is an object the API server says does not exist.
	Missing bool
	// Denied is a read the reader's rights do not allow.
	Denied bool
	// Err says what else kept it from being read (a kind not served, no answer).
	Err string
}

// Observed holds what a reader read, by request.
type Observed map[Read]Result

// Next names the reads the trace of in would still use, in the order it would use them: the
// Workload's namespace (a preview?), then what Resolve reads of the objects in the way.
func Next(in Input) []Read {
	reads := []Read{}
	if _, ok := in.Observed[namespaceRead(in)]; !ok {
		reads = append(reads, namespaceRead(in))
	}
	tr, err := Compute(in)
	if err != nil {
		return reads
	}
	return append(reads, Reads(tr, in.Observed)...)
}

// probe is a probe of the object r names, for look.
func (r Ref) probe(look string) *scorev1b1.TraceProbe {
	return &scorev1b1.TraceProbe{Look: look, APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// getRead reads the object r names; a Secret as its metadata only.
func getRead(r Ref) Read {
	return Read{Ref: r, MetadataOnly: r.group() == "" && r.Kind == "Secret"}
}

// NamespaceRead reads the Workload's namespace: whether it is a preview environment. A reader
// that holds the namespace (the orchestrator caches its metadata) puts it in Observed under it.
func NamespaceRead(in Input) Read {
	return namespaceRead(in)
}

func namespaceRead(in Input) Read {
	return getRead(Ref{APIVersion: "v1", Kind: "Namespace", Name: in.Workload.Namespace})
}

func listRead(apiVersion, kind, namespace string, l List) Read {
	return Read{Ref: Ref{APIVersion: apiVersion, Kind: kind, Namespace: namespace}, List: l}
}
