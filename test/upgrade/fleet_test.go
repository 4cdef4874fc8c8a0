package upgrade

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The fleet's namespaces: the shop runs the examples and a consumer of the shared database,
// payments another consumer; the shared database lives in shared-data. The platform shares
// it with namespaces labelled share=yes.
const (
	shop       = "shop"
	payments   = "payments"
	sharedData = "shared-data"
)

// fleetNamespaces are the namespaces whose objects the fleet owns.
var fleetNamespaces = []string{shop, payments, sharedData}

// fleetConfig is a release's shipped config with what the platform team added to it: a
// postgres class shared from shared-data with the namespaces labelled share=yes, and a
// rollout policy (two waves, a short bake). changed is the platform's change the fleet saw
// rolled out before the upgrade: a value of the web-service backend (k8s-web-v2) that its
// template does not read, so that the rollout renders the same objects.
func fleetConfig(shipped []byte, changed bool) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(shipped, &doc); err != nil {
		return nil, err
	}
	provisioners, _ := doc["provisioners"].([]any)
	var shared map[string]any
	for _, p := range provisioners {
		def, _ := p.(map[string]any)
		if def["type"] == "postgres" && def["class"] == nil {
			shared = map[string]any{}
			for k, v := range def {
				shared[k] = v
			}
			break
		}
	}
	if shared == nil {
		return nil, errors.New("no postgres definition in the shipped catalog")
	}
	shared["uri"], shared["class"] = "template://platform/postgres-shared", "shared"
	shared["sharing"] = map[string]any{"namespace": sharedData, "namespaceSelector": map[string]any{"matchLabels": map[string]any{"share": "yes"}}}
	doc["provisioners"] = append([]any{shared}, provisioners...) // before the catalog's, which serves every class
	doc["rollout"] = map[string]any{"waves": []any{"50%", "100%"}, "bakeTime": "5s", "progressDeadline": "3m"}
	if changed {
		found := false
		profiles, _ := doc["profiles"].([]any)
		for _, p := range profiles {
			backends, _ := p.(map[string]any)["backends"].([]any)
			for _, b := range backends {
				backend, _ := b.(map[string]any)
				if backend["backendId"] != "k8s-web-v2" {
					continue
				}
				template, _ := backend["template"].(map[string]any)
				values, _ := template["values"].(map[string]any)
				if values == nil {
					values = map[string]any{}
				}
				values["tier"] = "standard"
				template["values"] = values
				found = true
			}
		}
		if !found {
			return nil, errors.New("no backend k8s-web-v2 in the shipped config")
		}
	}
	return yaml.Marshal(doc)
}

// createFleet creates the fleet under r: the namespaces, r's examples in the shop, and a
// consumer of the shared database in the shop and in payments. It returns the Workloads' keys.
func createFleet(t *testing.T, r *release) []string {
	t.Helper()
	for name, labels := range map[string]map[string]string{shop: {"share": "yes"}, payments: {"share": "yes"}, sharedData: nil} {
		testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	}
	var workloads []*scorev1b1.Workload
	examples := os.DirFS(r.root)
	files, err := fsGlob(r.root)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s's examples: %v %v", r.name, files, err)
	}
	for _, f := range files {
		ws, err := devenv.Example(examples, f, shop)
		if err != nil {
			t.Fatal(err)
		}
		workloads = append(workloads, ws...)
	}
	sharedDB := func(r *scorev1b1.Resource) { r.Class = ptr.To("shared"); r.ID = ptr.To("ledger") }
	workloads = append(workloads,
		testenv.Workload(shop, "billing", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", sharedDB),
			testenv.WithVar("DB_PASSWORD", "${resources.db.password}")),
		testenv.Workload(payments, "invoices", testenv.WithPort("http", 80), testenv.WithResource("db", "postgres", sharedDB),
			testenv.WithVar("DB_PASSWORD", "${resources.db.password}")))
	var keys []string
	for _, w := range workloads {
		testenv.Create(t, c, w)
		keys = append(keys, w.Namespace+"/"+w.Name)
	}
	slices.Sort(keys)
	return keys
}

// fsGlob is the example Score files of the tree at root, relative to it.
func fsGlob(root string) ([]string, error) {
	entries, err := os.ReadDir(root + "/examples")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(root + "/examples/" + e.Name() + "/score.yaml"); err == nil {
			out = append(out, "examples/"+e.Name()+"/score.yaml")
		}
	}
	return out, nil
}

// waitFleetReady waits until every Workload of the fleet is Ready for its generation.
func waitFleetReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	for _, ns := range []string{shop, payments} {
		if err := devenv.WaitReady(ctx, c, ns, timeout, io.Discard); err != nil {
			t.Fatalf("%v\n%s", err, running.LogTail())
		}
	}
}

// latestRollout is the newest ConfigRollout, or nil when there is none.
func latestRollout(t *testing.T) *scorev1b1.ConfigRollout {
	t.Helper()
	var list scorev1b1.ConfigRolloutList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) ||
			list.Items[i].CreationTimestamp.Equal(&list.Items[j].CreationTimestamp) && list.Items[i].Name < list.Items[j].Name
	})
	return &list.Items[len(list.Items)-1]
}

// waitRolloutCompleted waits until a rollout other than those named in before exists and has
// completed, and returns it.
func waitRolloutCompleted(t *testing.T, before []string, timeout time.Duration) *scorev1b1.ConfigRollout {
	t.Helper()
	var done *scorev1b1.ConfigRollout
	testenv.Eventually(t, timeout, "a new config rollout completed", func() error {
		var list scorev1b1.ConfigRolloutList
		if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return err
		}
		var seen []string
		for i := range list.Items {
			r := &list.Items[i]
			if slices.Contains(before, r.Name) {
				continue
			}
			seen = append(seen, r.Name+"="+r.Status.Phase+": "+r.Status.Message)
			if r.Status.Phase == scorev1b1.RolloutCompleted {
				done = r
				return nil
			}
		}
		return fmt.Errorf("new rollouts: %v", seen)
	})
	return done
}

// rolloutNames are the names of the ConfigRollouts there are.
func rolloutNames(t *testing.T) []string {
	t.Helper()
	var list scorev1b1.ConfigRolloutList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list.Items {
		out = append(out, r.Name)
	}
	return out
}

// readySampler lists the fleet's Workloads every period from start to Stop, and records every
// Workload it finds not Ready (or missing) in a sample, and the steps of the upgrade (mark).
type readySampler struct {
	want    []string
	start   time.Time
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	samples int
	// notReady are what the samples found not Ready, in order; marks the steps.
	notReady []notReady
	marks    []step
}

// notReady is a Workload (namespace/name) a sample found not Ready, at (since the sampling
// started), and what its Ready condition said ("missing" for no Workload).
type notReady struct {
	at       time.Duration
	workload string
	reason   string
	message  string
}

func (n notReady) String() string {
	return fmt.Sprintf("%6.1fs %s %s: %s", n.at.Seconds(), n.workload, n.reason, n.message)
}

// step is a step of the upgrade, at (since the sampling started).
type step struct {
	at   time.Duration
	name string
}

// sampleReady starts sampling the Ready condition of the Workloads want (namespace/name).
func sampleReady(want []string, period time.Duration) *readySampler {
	s := &readySampler{want: want, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *readySampler) sample() {
	at := time.Since(s.start)
	seen := map[string]*metav1.Condition{}
	for _, ns := range []string{shop, payments} {
		var list scorev1b1.WorkloadList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			// The administrator's read failed (the API server busy): no sample.
			return
		}
		for _, w := range list.Items {
			ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
			if ready == nil {
				ready = &metav1.Condition{Status: metav1.ConditionUnknown, Reason: "NoReadyCondition"}
			}
			seen[w.Namespace+"/"+w.Name] = ready
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	for _, key := range s.want {
		ready, ok := seen[key]
		switch {
		case !ok:
			s.notReady = append(s.notReady, notReady{at: at, workload: key, reason: "missing"})
		case ready.Status != metav1.ConditionTrue:
			s.notReady = append(s.notReady, notReady{at: at, workload: key, reason: ready.Reason, message: ready.Message})
		}
	}
}

// mark records a step of the upgrade in the samples' timeline, and returns when it was.
func (s *readySampler) mark(name string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := time.Since(s.start)
	s.marks = append(s.marks, step{at: at, name: name})
	return at
}

// Stop ends the sampling and returns the samples taken, the Workloads they found not Ready,
// and the steps marked.
func (s *readySampler) Stop() (samples int, bad []notReady, steps []step) {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.notReady, s.marks
}

// kept is what an upgrade must keep of an object: its UID, a Secret's data, a Deployment's or
// StatefulSet's generation and pod template.
type kept struct {
	uid         types.UID
	data        string
	generation  int64
	podTemplate string
	// replicas is a StatefulSet's.
	replicas int32
	// applied is whether the runtime applied it (a Workload's, marked score.dev/workload), or
	// a provisioner (an instance's, marked score.dev/instance).
	runtime bool
}

// snapshot is every object of the fleet's namespaces, and the provisioner's state key, by
// "Kind namespace/name".
func snapshot(t *testing.T) map[string]kept {
	t.Helper()
	out := map[string]kept{}
	lists := map[string]func() client.ObjectList{
		"Workload": func() client.ObjectList { return &scorev1b1.WorkloadList{} }, "ResourceClaim": func() client.ObjectList { return &scorev1b1.ResourceClaimList{} },
		"WorkloadPlan": func() client.ObjectList { return &scorev1b1.WorkloadPlanList{} }, "WorkloadExposure": func() client.ObjectList { return &scorev1b1.WorkloadExposureList{} },
		"Secret": func() client.ObjectList { return &corev1.SecretList{} }, "ConfigMap": func() client.ObjectList { return &corev1.ConfigMapList{} },
		"PersistentVolumeClaim": func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} }, "Service": func() client.ObjectList { return &corev1.ServiceList{} },
		"Deployment": func() client.ObjectList { return &appsv1.DeploymentList{} }, "StatefulSet": func() client.ObjectList { return &appsv1.StatefulSetList{} },
		"Job": func() client.ObjectList { return &batchv1.JobList{} }, "Pod": func() client.ObjectList { return &corev1.PodList{} },
	}
	for _, ns := range fleetNamespaces {
		for kind, newList := range lists {
			l := newList()
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if err := meta.EachListItem(l, func(o k8sruntime.Object) error {
				obj := o.(client.Object)
				k := kept{uid: obj.GetUID(), generation: obj.GetGeneration(), runtime: obj.GetLabels()[scorev1b1.LabelWorkload] != "" && obj.GetLabels()[scorev1b1.LabelInstance] == ""}
				switch o := obj.(type) {
				case *corev1.Secret:
					k.data = digestOf(o.Data)
				case *appsv1.Deployment:
					k.podTemplate = jsonOf(t, o.Spec.Template)
				case *appsv1.StatefulSet:
					k.podTemplate = jsonOf(t, o.Spec.Template)
					k.replicas = ptr.Deref(o.Spec.Replicas, 1)
				}
				out[kind+" "+ns+"/"+obj.GetName()] = k
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var key corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "score-provisioner-state-key"}, &key); err != nil {
		t.Fatalf("the provisioner's state key: %v", err)
	}
	out["Secret "+namespace+"/"+key.Name] = kept{uid: key.UID, data: digestOf(key.Data)}
	return out
}

func digestOf(data map[string][]byte) string {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range data {
			if !yield(k) {
				return
			}
		}
	})
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%x;", k, data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// changes is what became of a snapshot's objects: recreated (same name, another UID), gone,
// new, Secrets whose data changed, and Deployments and StatefulSets whose pod template changed
// (with the change).
type changes struct {
	recreated, gone, added, secrets []string
	templates                       map[string]templateChanged
	// runtime are the runtime's Deployments and StatefulSets (before).
	runtime []string
}

// templateChanged is how a Deployment's or StatefulSet's pod template changed, and in how many
// generations.
type templateChanged struct {
	change      string
	generations int64
}

// compare is what changed from before to after (pods aside: restarts counts them).
func compare(before, after map[string]kept) changes {
	var ch changes
	ch.templates = map[string]templateChanged{}
	for key, was := range before {
		if strings.HasPrefix(key, "Pod ") {
			continue
		}
		if was.runtime && (strings.HasPrefix(key, "Deployment ") || strings.HasPrefix(key, "StatefulSet ")) {
			ch.runtime = append(ch.runtime, key)
		}
		now, ok := after[key]
		switch {
		case !ok:
			ch.gone = append(ch.gone, key)
		case now.uid != was.uid:
			ch.recreated = append(ch.recreated, key)
		case now.data != was.data:
			ch.secrets = append(ch.secrets, key)
		case now.podTemplate != was.podTemplate:
			ch.templates[key] = templateChanged{change: templateChange(was.podTemplate, now.podTemplate), generations: now.generation - was.generation}
		}
	}
	for key := range after {
		if _, ok := before[key]; !ok && !strings.HasPrefix(key, "Pod ") {
			ch.added = append(ch.added, key)
		}
	}
	for _, l := range [][]string{ch.recreated, ch.gone, ch.added, ch.secrets, ch.runtime} {
		slices.Sort(l)
	}
	return ch
}

// templateChange names the fields of the pod spec that differ between two pod templates, as
// "spec.field: old -> new" (the metadata too, as "metadata").
func templateChange(was, now string) string {
	var a, b struct {
		Metadata map[string]any `json:"metadata"`
		Spec     map[string]any `json:"spec"`
	}
	_ = json.Unmarshal([]byte(was), &a)
	_ = json.Unmarshal([]byte(now), &b)
	var diffs []string
	if fmt.Sprint(a.Metadata) != fmt.Sprint(b.Metadata) {
		diffs = append(diffs, fmt.Sprintf("metadata: %v -> %v", a.Metadata, b.Metadata))
	}
	fields := map[string]bool{}
	for k := range a.Spec {
		fields[k] = true
	}
	for k := range b.Spec {
		fields[k] = true
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	}) {
		va, _ := json.Marshal(a.Spec[k])
		vb, _ := json.Marshal(b.Spec[k])
		if string(va) != string(vb) {
			diffs = append(diffs, fmt.Sprintf("spec.%s: %s -> %s", k, va, vb))
		}
	}
	return strings.Join(diffs, "; ")
}

// restartedPods are the pods of before gone or created again in after, by their owner's kind
// and name ("ReplicaSet shop/hello-5d8f..." or "StatefulSet shop/ledger").
func restartedPods(t *testing.T, before, after map[string]kept) []string {
	t.Helper()
	var out []string
	for key, was := range before {
		if !strings.HasPrefix(key, "Pod ") {
			continue
		}
		if now, ok := after[key]; !ok || now.uid != was.uid {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}
