package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
)

// blocked bounds a test's wait for what the applier must do (a request it must make, a gate it
// must pass): reaching it fails the test, it never decides a pass.
const blocked = 10 * time.Second

var (
	configMap = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	service   = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
)

// apiServer is a cluster's objects by "Kind/name", behind a client: Get reads them, an apply
// patch writes them, and one that carries createOnly fails with a conflict on an object that
// exists. Each request is recorded ("get Kind/name", "apply Kind/name", "create Kind/name"), and
// onPatch, when set, runs at the start of each patch (to hold it or fail it).
type apiServer struct {
	mu      sync.Mutex
	objects map[string]*unstructured.Unstructured
	log     []string
	onPatch func(name string) error
	// onDelete, when set, runs at the start of each delete (to hold it).
	onDelete func(name string)
	// written, when set, is told of each object a patch wrote, once recorded.
	written func(name string)
}

func (s *apiServer) record(entry string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, entry)
}

func (s *apiServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *apiServer) client() client.Client {
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(configMap, meta.RESTScopeNamespace)
	mapper.Add(service, meta.RESTScopeNamespace)
	return interceptor.NewClient(fake.NewClientBuilder().WithRESTMapper(mapper).Build(), interceptor.Funcs{
		Delete: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.DeleteOption) error {
			u := obj.(*unstructured.Unstructured)
			name := u.GetKind() + "/" + u.GetName()
			if s.onDelete != nil {
				s.onDelete(name)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.log = append(s.log, "delete "+name)
			if _, ok := s.objects[name]; !ok {
				return apierrors.NewNotFound(schema.GroupResource{Resource: u.GetKind()}, u.GetName())
			}
			delete(s.objects, name)
			return nil
		},
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			u := obj.(*unstructured.Unstructured)
			name := u.GetKind() + "/" + key.Name
			s.record("get " + name)
			s.mu.Lock()
			defer s.mu.Unlock()
			live, ok := s.objects[name]
			if !ok {
				return apierrors.NewNotFound(schema.GroupResource{Resource: u.GetKind()}, key.Name)
			}
			live.DeepCopyInto(u)
			return nil
		},
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
			u := obj.(*unstructured.Unstructured)
			name := u.GetKind() + "/" + u.GetName()
			if patch != client.Apply {
				return fmt.Errorf("not an apply patch: %s", name)
			}
			verb := "apply "
			if u.GetResourceVersion() == createOnly {
				verb = "create "
			}
			if s.onPatch != nil {
				if err := s.onPatch(name); err != nil {
					s.record("failed " + verb + name)
					return err
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, exists := s.objects[name]; exists && verb == "create " {
				s.log = append(s.log, "conflict "+verb+name)
				return apierrors.NewConflict(schema.GroupResource{Resource: u.GetKind()}, u.GetName(), errors.New("the object has been modified"))
			}
			s.log = append(s.log, verb+name)
			stored := u.DeepCopy()
			stored.SetResourceVersion("1")
			s.objects[name] = stored
			if s.written != nil {
				s.written(name)
			}
			return nil
		},
	})
}

func object(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	return u
}

// theirs is an object of another instance's making (no instance label), in namespace team.
func theirs(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := object(gvk, name)
	u.SetNamespace("team")
	u.SetLabels(map[string]string{"made-by": "tenant"})
	return u
}

func newServer(existing ...*unstructured.Unstructured) *apiServer {
	s := &apiServer{objects: map[string]*unstructured.Unstructured{}}
	for _, u := range existing {
		s.objects[u.GetKind()+"/"+u.GetName()] = u
	}
	return s
}

var marks = prepare.InstanceMarks("team", "abc")

// The whole set is refused when an object of it exists and is not ours, before anything is
// written: the reads run at once, and the applies wait for all of them.
func TestApplyRefusesTheSetBeforeAnyWrite(t *testing.T) {
	s := newServer(theirs(service, "b"))
	a := &Applier{Client: s.client(), FieldManager: "m"}
	_, err := a.Apply(context.Background(), []*unstructured.Unstructured{object(configMap, "a"), object(service, "b"), object(service, "c")}, marks)
	var owned *OwnedElsewhere
	if !errors.As(err, &owned) || owned.Name != "b" || err.Error() != "Service b exists and was not created by the provisioner" {
		t.Fatalf("error %v, want Service b refused", err)
	}
	for _, r := range s.requests() {
		if !strings.HasPrefix(r, "get ") {
			t.Fatalf("requests %v: a write before the refusal", s.requests())
		}
	}
}

// outcome is what a call run in the background returned.
type outcome[T any] struct {
	res T
	err error
}

// inBackground runs f in a goroutine, its outcome sent once on the channel returned.
func inBackground[T any](f func() (T, error)) <-chan outcome[T] {
	done := make(chan outcome[T], 1)
	go func() {
		res, err := f()
		done <- outcome[T]{res, err}
	}()
	return done
}

// A release's deletions are in flight together: a member that comes back with the objects of
// many moved Workloads to delete is cleared a round trip per Workload. What inUse keeps is not
// deleted; what was already gone is not waited for; the rest is named in order.
func TestReleaseDeletesAtOnce(t *testing.T) {
	s := newServer(object(configMap, "c1"), object(service, "s1"), object(service, "kept"))
	arrived, release := make(chan string, 8), make(chan struct{})
	s.onDelete = func(name string) {
		arrived <- name
		<-release
	}
	entry := func(gvk schema.GroupVersionKind, name string) scorev1b1.AppliedObject {
		return scorev1b1.AppliedObject{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name}
	}
	a := &Applier{Client: s.client(), FieldManager: "m"}
	done := inBackground(func() (Released, error) {
		return a.Release(context.Background(), []scorev1b1.AppliedObject{entry(configMap, "c1"), entry(service, "gone"), entry(service, "kept"), entry(service, "s1")},
			func(o scorev1b1.AppliedObject) (bool, error) { return o.Name == "kept", nil })
	})
	var got []string
	for range 3 {
		select {
		case name := <-arrived:
			got = append(got, name)
		case <-time.After(blocked):
			t.Fatalf("deletions in flight %v, want three at once", got)
		}
	}
	close(release)
	out := <-done
	if out.err != nil {
		t.Fatal(out.err)
	}
	slices.Sort(got)
	if want := []string{"ConfigMap/c1", "Service/gone", "Service/s1"}; !slices.Equal(got, want) {
		t.Fatalf("deleted %v, want %v", got, want)
	}
	if want := []string{"ConfigMap c1", "Service s1"}; !slices.Equal(out.res.Remaining, want) {
		t.Fatalf("remaining %v, want %v", out.res.Remaining, want)
	}
	if len(out.res.Kept) != 1 || out.res.Kept[0].Name != "kept" || s.objects["Service/kept"] == nil {
		t.Fatalf("kept %v; the kept Service deleted: %v", out.res.Kept, s.objects["Service/kept"] == nil)
	}
}

// The applies of a stage are in flight together, and no object of a later stage is applied
// before every apply of the earlier one has returned. The results are in the order of the
// prepared objects (by stage, then as given).
func TestApplyStagesInOrderAndEachStageAtOnce(t *testing.T) {
	s := newServer()
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		arrived  = make(chan string, 8)
		release  = make(chan struct{})
	)
	var early []string
	s.onPatch = func(name string) error {
		mu.Lock()
		for other := range inFlight {
			if strings.HasPrefix(name, "Service/") && strings.HasPrefix(other, "ConfigMap/") {
				early = append(early, name+" while "+other)
			}
		}
		inFlight[name] = true
		mu.Unlock()
		arrived <- name
		<-release
		mu.Lock()
		delete(inFlight, name)
		mu.Unlock()
		return nil
	}
	a := &Applier{Client: s.client(), FieldManager: "m"}
	done := inBackground(func() (Result, error) {
		return a.Apply(context.Background(), []*unstructured.Unstructured{
			object(service, "s1"), object(configMap, "c1"), object(service, "s2"), object(configMap, "c2"),
		}, marks)
	})
	waitFor := func(want ...string) {
		t.Helper()
		var got []string
		for range want {
			select {
			case name := <-arrived:
				got = append(got, name)
			case <-time.After(blocked):
				t.Fatalf("applies in flight %v, want %v at once", got, want)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("applies in flight %v, want %v", got, want)
		}
	}
	waitFor("ConfigMap/c1", "ConfigMap/c2") // both in flight, neither answered
	release <- struct{}{}
	release <- struct{}{}
	waitFor("Service/s1", "Service/s2")
	close(release)
	out := <-done
	if out.err != nil {
		t.Fatal(out.err)
	}
	if len(early) > 0 {
		t.Fatalf("a later stage applied while an earlier one was in flight: %v", early)
	}
	var order []string
	for _, o := range out.res.Objects {
		order = append(order, o.Kind+"/"+o.Name)
	}
	if want := []string{"ConfigMap/c1", "ConfigMap/c2", "Service/s1", "Service/s2"}; !slices.Equal(order, want) {
		t.Fatalf("results %v, want %v", order, want)
	}
}

// Of two failed applies, the error returned is the earlier object's, whichever failed first;
// what was applied is listed.
func TestApplyReportsTheEarliestObjectsError(t *testing.T) {
	s := newServer()
	secondFailed := make(chan struct{})
	s.onPatch = func(name string) error {
		switch name {
		case "Service/s2":
			defer close(secondFailed)
			return apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "s2", errors.New("quota"))
		case "Service/s1":
			select {
			case <-secondFailed:
			case <-time.After(blocked):
				return errors.New("s2 was never applied alongside s1")
			}
			return apierrors.NewBadRequest("s1 is invalid")
		}
		return nil
	}
	a := &Applier{Client: s.client(), FieldManager: "m"}
	res, err := a.Apply(context.Background(), []*unstructured.Unstructured{object(service, "s1"), object(service, "s2"), object(service, "s3")}, marks)
	if err == nil || !strings.Contains(err.Error(), "s1 is invalid") {
		t.Fatalf("error %v, want s1's", err)
	}
	if len(res.Objects) != 1 || res.Objects[0].Name != "s3" {
		t.Fatalf("listed %+v, want s3 (applied)", res.Objects)
	}
}

// ApplyAfter's first write overlaps the reads and the creation of the first stage's objects
// that do not exist; an object that exists is changed, and a later stage applied, only once it
// returned. Its error stops the apply, and is the one returned.
func TestApplyAfterWaitsForTheFirstWrite(t *testing.T) {
	ours := object(configMap, "kept")
	ours.SetNamespace("team")
	ours.SetLabels(map[string]string{scorev1b1.LabelInstance: "abc"})
	objs := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{object(configMap, "new"), object(configMap, "kept"), object(service, "later")}
	}
	t.Run("passed", func(t *testing.T) {
		s := newServer(ours)
		a := &Applier{Client: s.client(), FieldManager: "m"}
		created := make(chan struct{})
		s.written = func(name string) {
			if name == "ConfigMap/new" {
				close(created)
			}
		}
		first := func(context.Context) error {
			select {
			case <-created: // created while the first write was in flight
			case <-time.After(blocked):
				return errors.New("the new object was not created alongside the first write")
			}
			s.record("first")
			return nil
		}
		if _, err := a.ApplyAfter(context.Background(), first, objs(), marks); err != nil {
			t.Fatal(err)
		}
		log := s.requests()
		at := slices.Index(log, "first")
		if at < 0 || slices.Index(log, "create ConfigMap/new") > at || slices.Index(log, "apply ConfigMap/kept") < at || slices.Index(log, "create Service/later") < at {
			t.Fatalf("requests %v: only the creation may precede the first write", log)
		}
	})
	t.Run("failed", func(t *testing.T) {
		s := newServer(ours)
		a := &Applier{Client: s.client(), FieldManager: "m"}
		raced := errors.New("the state was written by another claim")
		_, err := a.ApplyAfter(context.Background(), func(context.Context) error { return raced }, objs(), marks)
		if !errors.Is(err, raced) {
			t.Fatalf("error %v, want the first write's", err)
		}
		for _, r := range s.requests() {
			if strings.HasPrefix(r, "apply ") || r == "create Service/later" {
				t.Fatalf("requests %v: a change, or a later stage, after the first write failed", s.requests())
			}
		}
	})
}

// With CreateUnseen, an object of a watched kind that the cache does not hold is created
// without a read. One that exists after all is never written over: the create fails, and the
// object is read, and refused when no instance made it, or applied when one did.
func TestCreateUnseen(t *testing.T) {
	ours := object(service, "ours")
	ours.SetNamespace("team")
	ours.SetLabels(map[string]string{scorev1b1.LabelInstance: "other"})
	s := newServer(theirs(service, "taken"), ours)
	w := &Watcher{Cache: emptyCache{}}
	w.kind(service, true).synced.Store(true)
	w.kind(configMap, true).synced.Store(true)
	a := &Applier{Client: s.client(), FieldManager: "m", Watcher: w, CreateUnseen: true}

	res, err := a.Apply(context.Background(), []*unstructured.Unstructured{object(configMap, "new"), object(service, "ours")}, marks)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"create ConfigMap/new", "conflict create Service/ours", "get Service/ours", "apply Service/ours"}; !sameRequests(s.requests(), want) {
		t.Fatalf("requests %v, want %v", s.requests(), want)
	}
	if got := s.objects["Service/ours"].GetLabels()[scorev1b1.LabelInstance]; got != "other" || len(res.Objects) != 2 {
		t.Fatalf("the shared object's instance label %q (KeepLabel), results %v", got, res.Objects)
	}

	s.log = nil
	before := s.objects["Service/taken"].DeepCopy()
	res, err = a.Apply(context.Background(), []*unstructured.Unstructured{object(service, "taken"), object(service, "fresh")}, marks)
	var owned *OwnedElsewhere
	if !errors.As(err, &owned) || owned.Name != "taken" {
		t.Fatalf("error %v, want Service taken refused", err)
	}
	if after := s.objects["Service/taken"]; after.GetLabels()["made-by"] != "tenant" || after.GetLabels()[scorev1b1.LabelInstance] != "" || !equalObjects(before, after) {
		t.Fatalf("the tenant's object was written: %v", after.Object)
	}
	// The new object of the set was created before the refusal was known: it is ours, and
	// listed, so that it is released with its owner.
	if len(res.Objects) != 1 || res.Objects[0].Name != "fresh" {
		t.Fatalf("listed %+v, want the object created", res.Objects)
	}
}

// emptyCache holds nothing.
type emptyCache struct{ cache.Cache }

func (emptyCache) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func sameRequests(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	return fmt.Sprint(a.Object) == fmt.Sprint(b.Object)
}
