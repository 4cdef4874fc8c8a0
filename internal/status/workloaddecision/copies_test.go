package workloaddecision

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
)

// onClusters places the placed profile's Workloads on n clusters ("All": every match).
func onClusters(n string) func(*orchconfig.Config) {
	return func(c *orchconfig.Config) { c.Profiles[1].Backends[0].Placement.Clusters = n }
}

// world is the API server for a Workload on several clusters: each pass's writes change it;
// the provisioner binds a claim at once, the runtime projects a plan at once and its
// exposure publishes https://<exposure>.example.com.
type world struct {
	t *testing.T
	o Observed
	// writes are the last pass's writes.
	writes []string
	// holdPlans: a plan deleted stays, being deleted, with its objects on its cluster (the
	// runtime's finalizer), until the test lets it go.
	holdPlans bool
	// events are the events the last write of each plan carried, by the plan's name.
	events map[string][]Event
}

func newWorld(t *testing.T, clusters string, fleet ...placement.Cluster) *world {
	o := Observed{Workload: workload(withAnnotation(scorev1b1.AnnotationProfile, "placed"), withResource("db", "postgres"), withVar("DB_HOST", "${resources.db.host}")),
		Now: now, Config: loaded(t, revOne, onClusters(clusters)), Clusters: fleet}
	return &world{t: t, o: o}
}

func euCluster(name string) placement.Cluster {
	return placement.Cluster{Name: name, Labels: map[string]string{"region": "eu"}}
}

// pass runs one pass of the orchestrator, its writes applied; the status decided is written.
func (wd *world) pass() Decision {
	wd.t.Helper()
	o := &wd.o
	o.HandedOver, o.Finalizer, o.ExposureWritten, o.PlanWritten, o.PassedOn, o.FinalizerRemoved = nil, nil, nil, nil, nil, nil
	o.ClaimsWritten, o.Copies.Written, o.Copies.Deleted = nil, nil, nil
	wd.writes = nil
	w := o.Workload
	for range 40 {
		d := From(*o)
		switch d.Next {
		case Done:
			if d.Status != nil {
				w.Status = *d.Status
			}
			return d
		case AddFinalizer:
			withFinalizer(w)
			o.Finalizer = &Written{}
			wd.writes = append(wd.writes, "add finalizer")
		case WriteClaims:
			if o.ClaimsWritten == nil {
				o.ClaimsWritten = map[string]error{}
			}
			for _, cw := range d.Claims {
				o.ClaimsWritten[cw.Name] = nil
				wd.writes = append(wd.writes, fmt.Sprintf("%s claim %s%s", cw.Op, cw.Name, on(cw.Spec.Cluster)))
				switch cw.Op {
				case CreateClaim:
					c := scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: cw.Name, Generation: 1,
						Labels: labelsOf(w), OwnerReferences: []metav1.OwnerReference{controller(w)}}, Spec: cw.Spec}
					bound(`{"host":"db.` + cw.Spec.Cluster + `"}`)(&c)
					c.Status.InstanceCluster = cw.Spec.Cluster
					o.Claims = append(o.Claims, c)
				case UpdateClaim:
					for i := range o.Claims {
						if o.Claims[i].Name == cw.Name {
							o.Claims[i].Spec = cw.Spec
						}
					}
				case DeleteClaim:
					o.Claims = slices.DeleteFunc(o.Claims, func(c scorev1b1.ResourceClaim) bool { return c.Name == cw.Name })
				}
			}
		case WriteExposure:
			name := d.Exposure.Name
			if name == "" {
				name = w.Name
				o.ExposureWritten = &Written{}
			} else {
				wd.copyWritten(KindExposure, name)
			}
			wd.writes = append(wd.writes, fmt.Sprintf("%s exposure %s", d.Exposure.Op, name))
			e := exposureOf(w, d.Exposure.Spec, "https://"+name+".example.com")
			e.Name = name
			wd.setExposure(e)
		case WritePlan:
			name := d.Plan.Name
			if name == "" {
				name = w.Name
				o.PlanWritten = &Written{}
			} else {
				wd.copyWritten(KindPlan, name)
			}
			what := "updating"
			if d.Plan.Create {
				what = "creating"
			}
			wd.writes = append(wd.writes, fmt.Sprintf("%s plan %s%s", what, name, on(d.Plan.Spec.Cluster)))
			if wd.events == nil {
				wd.events = map[string][]Event{}
			}
			wd.events[name] = d.Plan.Events
			p := planOf(w, d.Plan.Spec)
			p.Name = name
			wd.setPlan(p)
		case DeleteCopies:
			if o.Copies.Deleted == nil {
				o.Copies.Deleted = map[Ref]error{}
			}
			for _, obj := range d.Deletes {
				ref := refOf(obj)
				o.Copies.Deleted[ref] = nil
				wd.writes = append(wd.writes, fmt.Sprintf("deleting %s %s", ref.Kind, ref.Name))
				if p := wd.plan(ref.Name); ref.Kind == KindPlan && wd.holdPlans && p != nil {
					ts := metav1.NewTime(now.Time)
					p.DeletionTimestamp = &ts
					p.Status.Objects = []scorev1b1.AppliedObject{{Cluster: p.Spec.Cluster}}
					continue
				}
				wd.remove(ref)
			}
		case PassOn:
			var to []string
			for _, c := range d.PassOn.Claims {
				to = append(to, c.Name)
				metav1.SetMetaDataAnnotation(&c.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, d.PassOn.Value)
			}
			if d.PassOn.Plan {
				to = append(to, o.Plan.Name)
				metav1.SetMetaDataAnnotation(&o.Plan.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, d.PassOn.Value)
			}
			for _, p := range d.PassOn.Copies {
				to = append(to, p.Name)
				metav1.SetMetaDataAnnotation(&p.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, d.PassOn.Value)
			}
			wd.writes = append(wd.writes, "pass on to "+strings.Join(to, ", "))
			o.PassedOn = &Written{}
		default:
			wd.t.Fatalf("unexpected write %s", d.Next)
		}
	}
	wd.t.Fatalf("no end after 40 writes: %v", wd.writes)
	return Decision{}
}

func (wd *world) copyWritten(kind, name string) {
	if wd.o.Copies.Written == nil {
		wd.o.Copies.Written = map[Ref]*Written{}
	}
	wd.o.Copies.Written[Ref{kind, name}] = &Written{}
}

func (wd *world) setExposure(e *scorev1b1.WorkloadExposure) {
	if e.Name == wd.o.Workload.Name {
		wd.o.Exposure = e
		return
	}
	wd.o.Copies.Exposures = slices.DeleteFunc(wd.o.Copies.Exposures, func(x *scorev1b1.WorkloadExposure) bool { return x.Name == e.Name })
	wd.o.Copies.Exposures = append(wd.o.Copies.Exposures, e)
}

func (wd *world) setPlan(p *scorev1b1.WorkloadPlan) {
	if p.Name == wd.o.Workload.Name {
		wd.o.Plan = p
		return
	}
	wd.o.Copies.Plans = slices.DeleteFunc(wd.o.Copies.Plans, func(x *scorev1b1.WorkloadPlan) bool { return x.Name == p.Name })
	wd.o.Copies.Plans = append(wd.o.Copies.Plans, p)
}

func (wd *world) plan(name string) *scorev1b1.WorkloadPlan {
	if name == wd.o.Workload.Name {
		return wd.o.Plan
	}
	for _, p := range wd.o.Copies.Plans {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// remove deletes an object at once (no finalizer holds it).
func (wd *world) remove(ref Ref) {
	o := &wd.o
	switch {
	case ref.Kind == KindPlan && ref.Name == o.Workload.Name:
		o.Plan = nil
	case ref.Kind == KindPlan:
		o.Copies.Plans = slices.DeleteFunc(o.Copies.Plans, func(x *scorev1b1.WorkloadPlan) bool { return x.Name == ref.Name })
	case ref.Name == o.Workload.Name:
		o.Exposure = nil
	default:
		o.Copies.Exposures = slices.DeleteFunc(o.Copies.Exposures, func(x *scorev1b1.WorkloadExposure) bool { return x.Name == ref.Name })
	}
}

// settle runs passes until one writes nothing, and returns the last decision.
func (wd *world) settle() Decision {
	wd.t.Helper()
	var all []string
	for range 10 {
		d := wd.pass()
		if len(wd.writes) == 0 {
			wd.writes = all
			return d
		}
		all = append(all, wd.writes...)
	}
	wd.t.Fatalf("not settled: %v", all)
	return Decision{}
}

func (wd *world) ready() string {
	c := meta.FindStatusCondition(wd.o.Workload.Status.Conditions, scorev1b1.ConditionReady)
	return string(c.Status) + "/" + c.Reason + ": " + c.Message
}

func (wd *world) endpoint() string {
	if e := wd.o.Workload.Status.Endpoint; e != nil {
		return *e
	}
	return ""
}

func TestSeveralClustersTwoCopiesEachWithItsDependency(t *testing.T) {
	wd := newWorld(t, "2", euCluster("eu-3"), euCluster("eu-2"), euCluster("eu-1"))
	wd.settle()
	db := wd.o.Claims[0].Name
	for _, want := range []string{
		"creating claim " + db + " on eu-1", "creating plan web on eu-1",
		"creating claim " + db + ".1 on eu-2", "creating plan web.1 on eu-2",
	} {
		if !slices.Contains(wd.writes, want) {
			t.Fatalf("writes %v, want %q", wd.writes, want)
		}
	}
	// Each copy reads its own dependency's outputs: the instance on its cluster.
	if !strings.Contains(string(wd.plan("web").Spec.Values.Raw), "db.eu-1") || !strings.Contains(string(wd.plan("web.1").Spec.Values.Raw), "db.eu-2") {
		t.Fatalf("values %s / %s, want each copy's own instance", wd.plan("web").Spec.Values.Raw, wd.plan("web.1").Spec.Values.Raw)
	}
	if got := wd.ready(); got != "True/Succeeded: The workload is ready." {
		t.Fatalf("Ready %s", got)
	}
	if got := wd.endpoint(); got != "https://web.example.com" {
		t.Fatalf("endpoint %q, want the first copy's", got)
	}
	// At rest: no write.
	if wd.pass(); len(wd.writes) > 0 {
		t.Fatalf("at rest: %v", wd.writes)
	}

	// The second copy not ready: ready with reduced capacity.
	wd.plan("web.1").Status.Phase = scorev1b1.PlanPhasePlanning
	wd.pass()
	if got := wd.ready(); got != "True/RuntimeDegraded: The workload is ready with reduced capacity." {
		t.Fatalf("Ready %s", got)
	}
	rt := meta.FindStatusCondition(wd.o.Workload.Status.Conditions, scorev1b1.ConditionRuntimeReady)
	if rt.Message != "The workload is running with reduced capacity: 1 of 2 copies are ready." {
		t.Fatalf("RuntimeReady %q", rt.Message)
	}
	// Neither ready: not Ready.
	wd.plan("web").Status.Phase = scorev1b1.PlanPhasePlanning
	wd.pass()
	if got := wd.ready(); !strings.HasPrefix(got, "False/RuntimeProvisioning") {
		t.Fatalf("Ready %s", got)
	}
}

func TestSeveralClustersAllFollowsTheFleet(t *testing.T) {
	wd := newWorld(t, "All", euCluster("eu-1"), euCluster("eu-2"))
	wd.settle()
	if wd.plan("web") == nil || wd.plan("web.1") == nil || len(wd.o.Claims) != 2 {
		t.Fatalf("want two copies, got %v", wd.writes)
	}
	db := wd.o.Claims[0].Name

	// A new matching cluster receives a copy.
	wd.o.Clusters = append(wd.o.Clusters, euCluster("eu-3"))
	wd.settle()
	if want := []string{"creating claim " + db + ".2 on eu-3", "creating exposure web.2", "creating plan web.2 on eu-3"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}

	// eu-1 stops matching: its copy (the Workload's own names) is removed, plan first, and
	// nothing of the others is written; the endpoint is now the first remaining copy's.
	wd.o.Clusters[0].Labels = map[string]string{"region": "us"}
	wd.settle()
	if want := []string{"deleting plan web", "deleting claim " + db, "deleting exposure web"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
	if got := wd.endpoint(); got != "https://web.1.example.com" {
		t.Fatalf("endpoint %q, want eu-2's copy's", got)
	}
	if got := wd.ready(); got != "True/Succeeded: The workload is ready." {
		t.Fatalf("Ready %s", got)
	}

	// eu-1 matches again: a copy again, in the free slot 0.
	wd.o.Clusters[0].Labels = map[string]string{"region": "eu"}
	wd.settle()
	if want := []string{"creating claim " + db + " on eu-1", "creating exposure web", "creating plan web on eu-1"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
}

// A copy being removed holds its cluster: its plan is deleted first, its claims and exposure
// only once the plan is gone (the runtime's finalizer holds it while it deletes the copy's
// objects), and no other copy is placed on its cluster or in its slot meanwhile.
func TestSeveralClustersRemovalIsOrdered(t *testing.T) {
	wd := newWorld(t, "2", euCluster("eu-1"), euCluster("eu-2"), euCluster("eu-3"))
	wd.settle()
	db := wd.o.Claims[0].Name
	wd.holdPlans = true
	wd.o.Config = loaded(t, revOne, onClusters("1"))
	wd.pass()
	if want := []string{"deleting plan web.1"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
	if wd.pass(); len(wd.writes) > 0 {
		t.Fatalf("writes %v while the plan is being deleted, want none", wd.writes)
	}
	// Two copies again while it is being deleted: the new one goes to eu-3, in slot 2.
	wd.o.Config = loaded(t, revOne, onClusters("2"))
	wd.settle()
	if want := []string{"creating claim " + db + ".2 on eu-3", "creating exposure web.2", "creating plan web.2 on eu-3"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
	// The runtime lets the plan go: then its claim and its exposure.
	wd.o.Copies.Plans = slices.DeleteFunc(wd.o.Copies.Plans, func(p *scorev1b1.WorkloadPlan) bool { return p.Name == "web.1" })
	wd.settle()
	if want := []string{"deleting claim " + db + ".1", "deleting exposure web.1"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
}

// Back to one copy: the copies beyond the first are removed, and the Workload is one copy
// again (its own names), writing nothing at rest.
func TestSeveralClustersBackToOne(t *testing.T) {
	wd := newWorld(t, "2", euCluster("eu-1"), euCluster("eu-2"))
	wd.settle()
	db := wd.o.Claims[0].Name
	wd.o.Config = loaded(t, revOne)
	wd.settle()
	if want := []string{"deleting plan web.1", "deleting claim " + db + ".1", "deleting exposure web.1"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
	if wd.o.Plan.Spec.Cluster != "eu-1" || len(wd.o.Copies.Plans) > 0 || len(wd.o.Claims) != 1 {
		t.Fatalf("plan on %s, copies %d, claims %d", wd.o.Plan.Spec.Cluster, len(wd.o.Copies.Plans), len(wd.o.Claims))
	}
	if got := wd.ready(); got != "True/Succeeded: The workload is ready." {
		t.Fatalf("Ready %s", got)
	}
}

// A backend that no longer places on members: the first copy runs on the hub, the others are
// removed.
func TestSeveralClustersBackToTheHub(t *testing.T) {
	wd := newWorld(t, "2", euCluster("eu-1"), euCluster("eu-2"))
	wd.settle()
	db := wd.o.Claims[0].Name
	wd.o.Config = loaded(t, revOne, func(c *orchconfig.Config) { c.Profiles[1].Backends[0].Placement = nil })
	wd.settle()
	for _, want := range []string{"updating claim " + db, "updating plan web", "deleting plan web.1", "deleting claim " + db + ".1", "deleting exposure web.1"} {
		if !slices.Contains(wd.writes, want) {
			t.Fatalf("writes %v, want %q", wd.writes, want)
		}
	}
	if wd.o.Plan.Spec.Cluster != "" || len(wd.o.Copies.Plans) > 0 {
		t.Fatalf("plan on %q, copies %d", wd.o.Plan.Spec.Cluster, len(wd.o.Copies.Plans))
	}
}

// scorectl reconcile reaches every copy: the request is passed on to each copy's claims and
// plan, once.
func TestSeveralClustersReconcileRequestReachesEveryCopy(t *testing.T) {
	wd := newWorld(t, "2", euCluster("eu-1"), euCluster("eu-2"))
	wd.settle()
	db := wd.o.Claims[0].Name
	metav1.SetMetaDataAnnotation(&wd.o.Workload.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, "r1")
	wd.settle()
	if want := []string{"pass on to " + db + ", " + db + ".1, web, web.1"}; !slices.Equal(wd.writes, want) {
		t.Fatalf("writes %v, want %v", wd.writes, want)
	}
	if wd.o.Workload.Status.LastHandledReconcileAt != "r1" {
		t.Fatalf("handled %q", wd.o.Workload.Status.LastHandledReconcileAt)
	}
}

// No cluster matches any more: nothing that runs is touched, and the Workload says so.
func TestSeveralClustersNoMatchTouchesNothing(t *testing.T) {
	wd := newWorld(t, "All", euCluster("eu-1"), euCluster("eu-2"))
	wd.settle()
	wd.o.Clusters = nil
	wd.settle()
	if len(wd.writes) > 0 || wd.plan("web") == nil || wd.plan("web.1") == nil || len(wd.o.Claims) != 2 {
		t.Fatalf("writes %v", wd.writes)
	}
	if got := wd.ready(); !strings.HasPrefix(got, "False/RuntimeSelecting") {
		t.Fatalf("Ready %s", got)
	}
}
