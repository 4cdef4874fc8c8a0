package provisioner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

// devCatalog is the sample config with the development catalog, as make dev loads it.
func devCatalog(t *testing.T) []byte {
	t.Helper()
	doc, err := orchconfig.DevelopmentConfig(os.DirFS(filepath.Join("..", "..", "..")))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// A Workload created in a namespace requeues only the claims that can see its ports, and its
// own: make bench found every Workload created requeuing every claim of the namespace, each
// pass reading from the API server again, O(N²) passes for N Workloads.
func TestWorkloadChangeRequeuesOnlyClaimsThatSeeIt(t *testing.T) {
	store := configsource.NewStore()
	if _, err := store.Offer("1", devCatalog(t)); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = scorev1b1.AddToScheme(scheme)
	claim := func(name, workload, provisioner string) *scorev1b1.ResourceClaim {
		return &scorev1b1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec:       scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: workload}},
			Status:     scorev1b1.ResourceClaimStatus{Provisioner: provisioner},
		}
	}
	// A claim of another namespace whose instance the platform shares from this one.
	sharedIn := func(name, provisioner string) *scorev1b1.ResourceClaim {
		c := claim(name, "x", provisioner)
		c.Namespace, c.Status.InstanceNamespace = "elsewhere", "team"
		return c
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&scorev1b1.ResourceClaim{}, indexInstanceNamespace, sharedFrom).WithObjects(
		sharedIn("s-service", "template://score-dev/service"),        // reads .WorkloadServices of this namespace
		sharedIn("s-db", "template://score-dev/postgres"),            // never reads ports
		claim("a-db", "a", "template://score-dev/postgres"),          // never reads ports
		claim("b-db", "b", "template://score-dev/postgres"),          // never reads ports
		claim("c-route", "c", "template://score-dev/route"),          // reads .WorkloadServices
		claim("d-new", "d", ""),                                      // not provisioned yet
		claim("e-cmd", "e", "cmd://provisioner"),                     // receives the whole data
		claim("f-gone", "f", "template://score-dev/no-longer-there"), // definition removed
		claim("new-db", "new", "template://score-dev/postgres"),      // the Workload's own
	).Build()
	r := &Reconciler{Client: c, Config: store}
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "new"}}
	var got []string
	for _, req := range r.claimsInNamespace(context.Background(), w) {
		got = append(got, req.Name)
	}
	sort.Strings(got)
	want := []string{"c-route", "d-new", "e-cmd", "f-gone", "new-db", "s-service"}
	if len(got) != len(want) {
		t.Fatalf("requeued %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("requeued %v, want %v", got, want)
		}
	}
}

func TestSeesWorkloads(t *testing.T) {
	defs := []orchconfig.Provisioner{
		{URI: "template://p/plain", Outputs: "host: {{ .Init.name }}"},
		{URI: "template://p/ports", Manifests: "port: {{ (index .WorkloadServices .Params.workload).Ports.http.Port }}"},
		{URI: "template://p/whole", Outputs: "data: {{ toJson . }}"},
		{URI: "template://p/dot", State: "{{ . }}"},
	}
	for uri, want := range map[string]bool{
		"template://p/plain": false, "template://p/ports": true, "template://p/whole": true, "template://p/dot": true,
		"template://p/unknown": true, "": true, "cmd://x": true, "helm://chart": true,
	} {
		if got := seesWorkloads(defs, uri); got != want {
			t.Errorf("%q: %v, want %v", uri, got, want)
		}
	}
}

// The answer is decided once per config revision: matching every claim's templates on every
// Workload event made a provisioner restarting over 1,000 Workloads miss its cache sync.
func TestWorkloadReadersAreDecidedOncePerConfig(t *testing.T) {
	store := configsource.NewStore()
	var w workloadReaders
	if !w.of(store)("template://score-dev/postgres") {
		t.Fatal("without a config every claim may read other Workloads' ports")
	}
	if _, err := store.Offer("1", devCatalog(t)); err != nil {
		t.Fatal(err)
	}
	sees := w.of(store)
	first := w.sees
	for uri, want := range map[string]bool{"template://score-dev/postgres": false, "template://score-dev/route": true, "template://score-dev/gone": true, "": true} {
		if got := sees(uri); got != want {
			t.Errorf("%q: %v, want %v", uri, got, want)
		}
	}
	w.of(store)
	if fmt.Sprintf("%p", w.sees) != fmt.Sprintf("%p", first) {
		t.Fatal("decided again for the same config")
	}
}

// A definition that cannot read other Workloads' ports is given its own Workload only; one that
// can is given every Workload of the namespace. Listing and converting all of them on every
// pass was 57% of the provisioner's CPU with 5,000 Workloads in one namespace (make bench).
func TestTemplateDataListsWorkloadsOnlyForDefinitionsThatReadThem(t *testing.T) {
	store := configsource.NewStore()
	if _, err := store.Offer("1", devCatalog(t)); err != nil {
		t.Fatal(err)
	}
	loaded, _ := store.Get()
	def := func(uri string) orchconfig.Provisioner {
		for _, d := range loaded.Config.Provisioners {
			if d.URI == uri {
				return d
			}
		}
		t.Fatalf("no definition %s in the development catalog", uri)
		return orchconfig.Provisioner{}
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = scorev1b1.AddToScheme(scheme)
	workload := func(name string) *scorev1b1.Workload {
		return &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Annotations: map[string]string{"team": name}},
			Spec: scorev1b1.WorkloadSpec{Service: &scorev1b1.Service{Ports: map[string]scorev1b1.ServicePort{"http": {Port: 80}}}}}
	}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(workload("a"), workload("b"), workload("c")).Build(), Config: store}
	claim := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a-db"},
		Spec: scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "a"}, Key: "db", Type: "postgres"}}
	id := claimIdentity(claim)
	for uri, want := range map[string][]string{
		"template://score-dev/postgres": {"a"},
		"template://score-dev/route":    {"a", "b", "c"},
	} {
		in, err := r.templateData(context.Background(), claim, def(uri), id, "", nil, instanceState{})
		if err != nil {
			t.Fatal(err)
		}
		d := provisioning.NewData(in)
		var got []string
		for name := range d.WorkloadServices {
			got = append(got, name)
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: WorkloadServices of %v, want %v", uri, got, want)
		}
		if d.WorkloadServices["a"].Ports["http"].Port != 80 || d.WorkloadMetadata["name"] != "a" {
			t.Errorf("%s: own Workload %+v, metadata %v", uri, d.WorkloadServices["a"], d.WorkloadMetadata)
		}
	}
}
