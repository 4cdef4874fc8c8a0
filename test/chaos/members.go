package chaos

// Member clusters (Options.Members): each its own simulated cluster (API server, etcd, kwok
// nodes), registered on the hub as `scorectl cluster add` registers one, reached by the
// controllers through a proxy that can black-hole it. Part of the Workloads select a backend
// that places on the clusters labelled chaos=member; the faults add, per member, a kill of its
// API server, and, on one member at a time, a black hole and a relabelling that moves its
// Workloads to another member. The audit covers every cluster.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/blackhole"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
)

// memberLabel is the label, chaos=member, of the clusters the placed Workloads may run on;
// membersBackend the backend that places them.
const (
	memberLabel    = "chaos"
	membersBackend = "k8s-web-members"
)

// member is one member cluster of the run.
type member struct {
	name  string
	k     *simcluster.Cluster
	c     client.Client
	kube  kubernetes.Interface
	proxy *blackhole.Proxy
	// faults holds one fault at a time on the member (its API server killed, black-holed).
	faults sync.Mutex
}

// memberCluster is the i-th member's simulated cluster: volumes for every dependency of the
// run, as the hub's.
func (r *run) memberCluster(name string) *simcluster.Cluster {
	return &simcluster.Cluster{Root: r.o.Root, Name: r.cluster + "-" + name, Dir: filepath.Join(r.dir, "members", name),
		Volumes: r.o.Workloads + 2*r.o.Namespaces + 8, Output: r.o.Progress}
}

// startMembers starts and registers the members (the registration's server is the member's
// proxy) and adds the backend that places on them.
func (r *run) startMembers(ctx context.Context) error {
	roles, err := registration.HubRoles(os.DirFS(r.o.Root))
	if err != nil {
		return err
	}
	for i := range r.o.Members {
		m := &member{name: fmt.Sprintf("m%d", i+1)}
		m.k = r.memberCluster(m.name)
		r.members = append(r.members, m)
		r.logf("starting member cluster %s", m.name)
		if err := m.k.Up(); err != nil {
			return fmt.Errorf("member %s: %w", m.name, err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", m.k.Kubeconfig())
		if err != nil {
			return err
		}
		cfg.Timeout = 15 * time.Second
		if m.c, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
			return err
		}
		if m.kube, err = kubernetes.NewForConfig(cfg); err != nil {
			return err
		}
		var server string
		if m.proxy, server, err = blackhole.New(cfg.Host); err != nil {
			return err
		}
		reg := registration.Registration{Name: m.name, Namespace: "score-system", Server: server, Labels: map[string]string{memberLabel: "member"}, Roles: roles}
		if _, err := registration.Register(ctx, cfg, r.c, reg); err != nil {
			return fmt.Errorf("registering member %s: %w", m.name, err)
		}
	}
	if err := devenv.AddPlacedBackend(ctx, r.c, membersBackend, map[string]any{memberLabel: "member"}); err != nil {
		return err
	}
	r.logf("%d members registered (through their proxies); Workloads labelled %s=members are placed on them", len(r.members), devenv.MembersLabel)
	return nil
}

// stopMembers stops the members' proxies and deletes their clusters.
func (r *run) stopMembers() {
	for _, m := range r.members {
		if m.proxy != nil {
			m.proxy.Close()
		}
		_ = m.k.Down()
	}
}

// scheduleMemberFaults kills each member's API server once, black-holes one member for a
// while, and takes another (the same with one member) out of the placement for a while by
// relabelling it: its Workloads move to the others, and stay there when it matches again.
func (r *run) scheduleMemberFaults(ctx context.Context, start time.Time, wg *sync.WaitGroup) {
	if len(r.members) == 0 {
		return
	}
	for _, m := range r.members {
		d := r.between(0.15, 0.85)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(d)))
			m.faults.Lock()
			defer m.faults.Unlock()
			down := time.Duration(500+r.intn(1500)) * time.Millisecond
			r.logf("kill -9 kube-apiserver of member %s, down for %s", m.name, down)
			if _, err := m.k.Component("kube-apiserver").Restart(down); err != nil {
				r.logf("restarting member %s's API server: %v", m.name, err)
				return
			}
			r.countFault(&r.report.MemberAPIServerRestarts)
			began := time.Now()
			waitReady(ctx, m.kube)
			r.logf("member %s's API server answered again %s later", m.name, time.Since(began).Round(100*time.Millisecond))
		}()
	}
	dark := r.members[r.intn(len(r.members))]
	// The black hole ends before the relabelling: the moved Workloads' new cluster answers
	// (a move onto a silent member waits for it, and one taken back before it answers does
	// not happen at all).
	darkAt, darkFor := r.between(0.2, 0.4), r.between(0.1, 0.2)
	if darkFor < 20*time.Second {
		darkFor = 20 * time.Second // longer than the probe's interval: the controllers notice
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(time.Until(start.Add(darkAt)))
		dark.faults.Lock()
		defer dark.faults.Unlock()
		r.logf("member %s black-holed for %s", dark.name, darkFor.Round(time.Second))
		dark.proxy.SetDark(true)
		time.Sleep(darkFor)
		held := dark.proxy.Holding()
		dark.proxy.SetDark(false)
		r.countFault(&r.report.BlackHoles)
		r.logf("member %s lit again (%d connections had bytes held)", dark.name, held)
	}()
	moved := r.members[r.intn(len(r.members))]
	if len(r.members) > 1 {
		for moved == dark {
			moved = r.members[r.intn(len(r.members))]
		}
	}
	relabelAt, relabelFor := r.between(0.62, 0.72), r.between(0.1, 0.15)
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(time.Until(start.Add(relabelAt)))
		r.logf("member %s relabelled out of the placement: its Workloads move", moved.name)
		r.retry(ctx, "relabelling "+moved.name, func() error { return r.relabel(ctx, moved.name, "") })
		r.countFault(&r.report.Relabels)
		time.Sleep(relabelFor)
		r.logf("member %s matches the placement again", moved.name)
		r.retry(ctx, "relabelling "+moved.name+" back", func() error { return r.relabel(ctx, moved.name, "member") })
	}()
}

// countFault counts a fault in the report.
func (r *run) countFault(n *int) {
	r.faultsMu.Lock()
	defer r.faultsMu.Unlock()
	*n++
}

// relabel sets the member's chaos label ("": removes it), as `kubectl label secret` would.
func (r *run) relabel(ctx context.Context, name, value string) error {
	s := &corev1.Secret{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: name}, s); err != nil {
		return err
	}
	if value == "" {
		delete(s.Labels, memberLabel)
	} else {
		s.Labels[memberLabel] = value
	}
	return r.c.Update(ctx, s)
}

// waitReady waits until an API server says it is ready.
func waitReady(ctx context.Context, kube kubernetes.Interface) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// auditMembers checks every member as the audit checks the hub, and across clusters: each
// object of ours there is marked for a live Workload whose plan lists it on that cluster, or
// is listed by a claim on that cluster; no Workload's object is on two clusters; each copy of
// an outputs Secret holds what the hub's holds.
func (r *run) auditMembers(ctx context.Context, inv *inventory) {
	if len(r.members) == 0 {
		return
	}
	rep := r.report
	orphan := func(format string, args ...any) { rep.Orphans = append(rep.Orphans, fmt.Sprintf(format, args...)) }
	// Where each Workload's applied objects are, across clusters, by object.
	where := map[string][]string{}
	for i := range inv.objects {
		o := &inv.objects[i]
		if o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID] != "" {
			id := objectID(o.GetKind(), o.GetNamespace(), o.GetName())
			where[id] = append(where[id], "the hub")
		}
	}
	listedByPlan, listedByClaim := map[string]bool{}, map[string]bool{}
	for _, p := range inv.plans {
		for _, o := range p.Status.Objects {
			listedByPlan[o.Cluster+"|"+objectID(o.Kind, o.Namespace, o.Name)] = true
		}
	}
	outputs := map[string]bool{} // the outputs Secrets of live claims, by namespace/name
	for _, c := range inv.claims {
		for _, o := range c.Status.Resources {
			listedByClaim[o.Cluster+"|"+objectID(o.Kind, o.Namespace, o.Name)] = true
		}
		if c.Status.SecretRef != nil {
			outputs[c.Namespace+"/"+c.Status.SecretRef.Name] = true
		}
	}
	for _, m := range r.members {
		var objects []unstructured.Unstructured
		r.retry(ctx, "listing member "+m.name+" for the audit", func() error {
			objects = nil
			for ns := 0; ns < r.o.Namespaces; ns++ {
				for _, gvk := range auditedKinds {
					list := &unstructured.UnstructuredList{}
					list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
					if err := m.c.List(ctx, list, client.InNamespace(fmt.Sprintf("chaos-%d", ns))); err != nil {
						return err
					}
					objects = append(objects, list.Items...)
				}
			}
			return nil
		})
		perInstance := map[string]int{}
		for i := range objects {
			o := &objects[i]
			rep.Audited[o.GetKind()+" on members"]++
			id := objectID(o.GetKind(), o.GetNamespace(), o.GetName())
			on := fmt.Sprintf("%s on %s", id, m.name)
			switch uid, instance := o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID], o.GetLabels()[scorev1b1.LabelInstance]; {
			case o.GetKind() == "ConfigMap" && o.GetName() == "kube-root-ca.crt":
			case uid != "":
				where[id] = append(where[id], m.name)
				w := inv.workloads[o.GetNamespace()+"/"+o.GetLabels()[scorev1b1.LabelWorkload]]
				switch {
				case w == nil || string(w.UID) != uid:
					orphan("%s: applied for a Workload that is gone", on)
				case !listedByPlan[m.name+"|"+id]:
					orphan("%s: applied, and its Workload's plan does not list it there", on)
				}
				if o.GetKind() == "Secret" && outputs[o.GetNamespace()+"/"+o.GetName()] {
					r.auditCopy(ctx, m, o)
				}
			case instance != "":
				if !listedByClaim[m.name+"|"+id] {
					orphan("%s: provisioned, and no claim lists it there", on)
				}
				if o.GetKind() == "StatefulSet" {
					perInstance[instance]++
				}
			default:
				orphan("%s: no owner, no claim lists it", on)
			}
		}
		for instance, n := range perInstance {
			if n > 1 {
				rep.Duplicates = append(rep.Duplicates, fmt.Sprintf("%d StatefulSets of instance %s on %s", n, instance, m.name))
			}
		}
	}
	for id, clusters := range where {
		if len(clusters) > 1 {
			rep.Duplicates = append(rep.Duplicates, fmt.Sprintf("%s is on %d clusters: %v", id, len(clusters), clusters))
		}
	}
}

// auditCopy compares the copy of an outputs Secret on a member with the hub's: the runtime
// keeps it in step, and nothing else writes it.
func (r *run) auditCopy(ctx context.Context, m *member, o *unstructured.Unstructured) {
	rep := r.report
	hub, err := secretHash(ctx, r.c, o.GetNamespace(), o.GetName())
	if err != nil {
		return // the claim went meanwhile
	}
	copied, err := secretHash(ctx, m.c, o.GetNamespace(), o.GetName())
	rep.CopiesChecked++
	if err != nil || copied != hub {
		rep.CredentialsChanged = append(rep.CredentialsChanged, fmt.Sprintf("the copy of outputs Secret %s/%s on %s differs from the hub's (%v)", o.GetNamespace(), o.GetName(), m.name, err))
	}
}

// plantOnMember plants, for the self-check, an object of an instance no claim lists on the
// first member.
func (r *run) plantOnMember(ctx context.Context) error {
	if len(r.members) == 0 {
		return nil
	}
	m := r.members[0]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "chaos-0"}}
	if err := m.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("self-check: the namespace chaos-0 on %s: %w", m.name, err)
	}
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos-0", Name: "planted-orphan", Labels: map[string]string{scorev1b1.LabelInstance: "0000000000000000"}}}
	return m.c.Create(ctx, planted)
}

// current keeps the record of a placed Workload current, and reports whether it is: a
// Workload that moved has its claims bound to new instances on its new cluster, with
// credentials of their own (an instance's identity includes its cluster), and is recorded
// again once they are bound. Claims still bound to the recorded instances keep their record,
// so that a credential changed under them is still found.
func (rec *recorder) current(ctx context.Context, w *scorev1b1.Workload) bool {
	recs, ok := rec.read(ctx, w)
	if !ok {
		return false
	}
	key := w.Namespace + "/" + w.Name
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if sameInstances(rec.claims[key], recs) {
		return true
	}
	rec.claims[key] = recs
	rec.moves[key]++
	return true
}

// sameInstances reports whether two records of a Workload's claims name the same instances.
func sameInstances(a, b []claimRecord) bool {
	if len(a) != len(b) {
		return false
	}
	byKey := map[string]string{}
	for _, c := range a {
		byKey[c.key] = c.instance
	}
	for _, c := range b {
		if byKey[c.key] != c.instance {
			return false
		}
	}
	return true
}
