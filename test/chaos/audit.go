package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
)

// claimRecord is a claim as it was when its Workload was first Ready.
type claimRecord struct {
	namespace, name, key string
	policy               scorev1b1.DeprovisionPolicy
	instance             string
	secret, hash         string
	resources            []scorev1b1.AppliedObject
}

// deletedWorkload is a Workload deleted mid-run.
type deletedWorkload struct {
	planned
}

// recorder records, once per Workload, the outputs Secrets' data hashes when it is first
// Ready with every claim bound.
type recorder struct {
	c      client.Client
	mu     sync.Mutex
	claims map[string][]claimRecord // by Workload namespace/name
	// lastFirstReady is when the last Workload was recorded Ready for the first time.
	lastFirstReady time.Time
	deleted        []deletedWorkload
	// moves counts, by Workload, the times a placed one was recorded again after its claims
	// moved to new instances (current).
	moves map[string]int
}

func newRecorder(c client.Client) *recorder {
	return &recorder{c: c, claims: map[string][]claimRecord{}, moves: map[string]int{}}
}

func (r *recorder) recorded(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.claims[key]
	return ok
}

func (r *recorder) loop(ctx context.Context) {
	for ctx.Err() == nil {
		r.pass(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (r *recorder) pass(ctx context.Context) {
	var list scorev1b1.WorkloadList
	if err := r.c.List(ctx, &list); err != nil {
		return // the API server may be down
	}
	for i := range list.Items {
		w := &list.Items[i]
		key := w.Namespace + "/" + w.Name
		if !ready(w) || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if r.recorded(key) {
			if w.Labels[devenv.MembersLabel] != "" {
				r.current(ctx, w)
			}
			continue
		}
		if recs, ok := r.read(ctx, w); ok {
			r.mu.Lock()
			r.claims[key] = recs
			r.lastFirstReady = time.Now()
			r.mu.Unlock()
		}
	}
}

// read records w's claims, when every declared one is bound with its outputs Secret.
func (r *recorder) read(ctx context.Context, w *scorev1b1.Workload) ([]claimRecord, bool) {
	var claims scorev1b1.ResourceClaimList
	if err := r.c.List(ctx, &claims, client.InNamespace(w.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: w.Name}); err != nil {
		return nil, false
	}
	var out []claimRecord
	for _, c := range claims.Items {
		if !metav1.IsControlledBy(&c, w) {
			continue
		}
		if c.Status.Phase != scorev1b1.ClaimPhaseBound || c.Status.SecretRef == nil {
			return nil, false
		}
		hash, err := secretHash(ctx, r.c, c.Namespace, c.Status.SecretRef.Name)
		if err != nil {
			return nil, false
		}
		out = append(out, claimRecord{namespace: c.Namespace, name: c.Name, key: c.Spec.Key, policy: c.Spec.DeprovisionPolicy,
			instance: c.Status.Instance, secret: c.Status.SecretRef.Name, hash: hash, resources: c.Status.Resources})
	}
	if len(out) != len(w.Spec.Resources) {
		return nil, false
	}
	return out, true
}

// secretHash digests a Secret's data, keys in order; the values never leave this function.
func secretHash(ctx context.Context, c client.Reader, ns, name string) (string, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return "", err
	}
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%x\n", k, s.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// inventory is everything the audit looks at in the run's namespaces.
type inventory struct {
	workloads map[string]*scorev1b1.Workload // by namespace/name
	claims    []scorev1b1.ResourceClaim
	plans     []scorev1b1.WorkloadPlan
	exposures []scorev1b1.WorkloadExposure
	// objects are the kinds the templates and the catalog create.
	objects []unstructured.Unstructured
}

var auditedKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
}

func (r *run) inventory(ctx context.Context) (*inventory, error) {
	inv := &inventory{workloads: map[string]*scorev1b1.Workload{}}
	var ws scorev1b1.WorkloadList
	var claims scorev1b1.ResourceClaimList
	var plans scorev1b1.WorkloadPlanList
	var exposures scorev1b1.WorkloadExposureList
	for _, l := range []client.ObjectList{&ws, &claims, &plans, &exposures} {
		if err := r.c.List(ctx, l); err != nil {
			return nil, err
		}
	}
	for i := range ws.Items {
		inv.workloads[ws.Items[i].Namespace+"/"+ws.Items[i].Name] = &ws.Items[i]
	}
	inv.claims, inv.plans, inv.exposures = claims.Items, plans.Items, exposures.Items
	for ns := 0; ns < r.o.Namespaces; ns++ {
		for _, gvk := range auditedKinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.c.List(ctx, list, client.InNamespace(fmt.Sprintf("chaos-%d", ns))); err != nil {
				return nil, err
			}
			inv.objects = append(inv.objects, list.Items...)
		}
	}
	return inv, nil
}

func objectID(kind, ns, name string) string { return kind + " " + ns + "/" + name }

// audit checks what the controllers left after the faults.
func (r *run) audit(ctx context.Context) {
	rep := r.report
	var inv *inventory
	r.retry(ctx, "listing for the audit", func() (err error) {
		inv, err = r.inventory(ctx)
		return err
	})
	if inv == nil {
		return
	}
	rep.Audited["Workload"] = len(inv.workloads)
	rep.Audited["ResourceClaim"] = len(inv.claims)
	rep.Audited["WorkloadPlan"] = len(inv.plans)
	rep.Audited["WorkloadExposure"] = len(inv.exposures)
	for _, o := range inv.objects {
		rep.Audited[o.GetKind()]++
	}
	dup := func(format string, args ...any) {
		rep.Duplicates = append(rep.Duplicates, fmt.Sprintf(format, args...))
	}
	orphan := func(format string, args ...any) { rep.Orphans = append(rep.Orphans, fmt.Sprintf(format, args...)) }

	// ownedBy reports whether o's controller is the live Workload named ns/name.
	ownerWorkload := func(o metav1.Object) (*scorev1b1.Workload, bool) {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "Workload" {
			return nil, false
		}
		w := inv.workloads[o.GetNamespace()+"/"+ref.Name]
		return w, w != nil && w.UID == ref.UID
	}

	// Claims: one per Workload and key, owned by that Workload; a claim without an owner is
	// a Retain (or Orphan) claim whose Workload was deleted.
	claimUIDs := map[string]bool{}
	perKey := map[string]int{}
	referenced := map[string]bool{} // objects some claim lists, and instances' state
	byInstance := map[string][]scorev1b1.ResourceClaim{}
	for _, c := range inv.claims {
		claimUIDs[string(c.UID)] = true
		perKey[c.Namespace+"/"+c.Spec.WorkloadRef.Name+"/"+c.Spec.Key]++
		for _, o := range c.Status.Resources {
			referenced[objectID(o.Kind, o.Namespace, o.Name)] = true
		}
		if c.Status.Instance != "" {
			referenced[objectID("Secret", c.Namespace, "score-state-"+c.Status.Instance)] = true
			byInstance[c.Status.Instance] = append(byInstance[c.Status.Instance], c)
		}
		if _, ok := ownerWorkload(&c); ok {
			continue
		}
		w := inv.workloads[c.Namespace+"/"+c.Spec.WorkloadRef.Name]
		retained := c.Spec.DeprovisionPolicy == scorev1b1.DeprovisionRetain || c.Spec.DeprovisionPolicy == scorev1b1.DeprovisionOrphan
		if metav1.GetControllerOf(&c) == nil && retained && (w == nil || string(w.UID) != c.Spec.WorkloadRef.UID) {
			continue
		}
		orphan("claim %s/%s (key %s) has no live owner", c.Namespace, c.Name, c.Spec.Key)
	}
	for k, n := range perKey {
		if n > 1 {
			dup("%d claims for %s", n, k)
		}
	}
	// One instance is one set of objects: the claims that share it list the same ones.
	for instance, claims := range byInstance {
		if len(claims) > 1 {
			rep.SharedInstances++
		}
		first := inventoryKey(claims[0].Status.Resources)
		for _, c := range claims[1:] {
			if got := inventoryKey(c.Status.Resources); got != first {
				dup("instance %s: claim %s/%s lists %s, claim %s/%s lists %s", instance, claims[0].Namespace, claims[0].Name, first, c.Namespace, c.Name, got)
			}
		}
	}

	// Plans and exposures: one per Workload, named after it and owned by it.
	planUIDs := map[string]bool{}
	for _, p := range inv.plans {
		planUIDs[string(p.UID)] = true
		if _, ok := ownerWorkload(&p); !ok {
			orphan("plan %s/%s has no live owner", p.Namespace, p.Name)
		}
	}
	for _, e := range inv.exposures {
		if _, ok := ownerWorkload(&e); !ok {
			orphan("exposure %s/%s has no live owner", e.Namespace, e.Name)
		}
	}

	// Objects: applied ones are owned by their live plan and marked with their live
	// Workload; provisioned ones are listed by a claim (or are an instance's state); outputs
	// Secrets are owned by their live claim. Nothing else may be there.
	perWorkload := map[string]int{}
	perInstance := map[string]int{}
	for i := range inv.objects {
		o := &inv.objects[i]
		id := objectID(o.GetKind(), o.GetNamespace(), o.GetName())
		ref := metav1.GetControllerOf(o)
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == "kube-root-ca.crt":
		case o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID] != "":
			w := inv.workloads[o.GetNamespace()+"/"+o.GetLabels()[scorev1b1.LabelWorkload]]
			if ref == nil || ref.Kind != "WorkloadPlan" || !planUIDs[string(ref.UID)] || w == nil || string(w.UID) != o.GetAnnotations()[scorev1b1.AnnotationWorkloadUID] {
				orphan("%s: applied for a Workload or plan that is gone", id)
			}
			perWorkload[o.GetKind()+" of "+o.GetNamespace()+"/"+o.GetLabels()[scorev1b1.LabelWorkload]]++
		case o.GetLabels()[scorev1b1.LabelInstance] != "":
			if !referenced[id] {
				orphan("%s: provisioned, and no claim lists it", id)
			}
			if o.GetKind() == "StatefulSet" {
				perInstance["StatefulSet of instance "+o.GetLabels()[scorev1b1.LabelInstance]]++
			}
		case ref != nil && ref.Kind == "ResourceClaim":
			if !claimUIDs[string(ref.UID)] {
				orphan("%s: owned by a claim that is gone", id)
			}
		default:
			orphan("%s: no owner, no claim lists it", id)
		}
	}
	for k, n := range perWorkload {
		if n > 1 {
			dup("%d objects: %s", n, k)
		}
	}
	for k, n := range perInstance {
		if n > 1 {
			dup("%d objects: %s", n, k)
		}
	}

	r.auditMembers(ctx, inv)
	r.auditCredentials(ctx, inv)
}

func inventoryKey(objs []scorev1b1.AppliedObject) string {
	ids := make([]string, 0, len(objs))
	for _, o := range objs {
		ids = append(ids, objectID(o.Kind, o.Namespace, o.Name))
	}
	sort.Strings(ids)
	return "[" + strings.Join(ids, ", ") + "]"
}

// auditCredentials compares every outputs Secret recorded at first Ready with what it holds
// now, and checks that a deleted Workload's Retain claim kept its data.
func (r *run) auditCredentials(ctx context.Context, inv *inventory) {
	rep := r.report
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	deleted := map[string]bool{}
	for _, d := range r.rec.deleted {
		deleted[d.namespace+"/"+d.name] = true
	}
	keys := make([]string, 0, len(r.rec.claims))
	for k := range r.rec.claims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		for _, rec := range r.rec.claims[key] {
			if deleted[key] && rec.policy != scorev1b1.DeprovisionRetain {
				continue // released with its Workload
			}
			rep.CredentialsChecked++
			hash, err := secretHash(ctx, r.c, rec.namespace, rec.secret)
			switch {
			case apierrors.IsNotFound(err) && deleted[key]:
				rep.RetainedMissing = append(rep.RetainedMissing, fmt.Sprintf("%s: the outputs Secret %s is gone", key, rec.secret))
			case err != nil:
				rep.CredentialsChanged = append(rep.CredentialsChanged, fmt.Sprintf("%s: the outputs Secret %s: %v", key, rec.secret, err))
			case hash != rec.hash:
				rep.CredentialsChanged = append(rep.CredentialsChanged, fmt.Sprintf("%s: the outputs Secret %s changed (key %s)", key, rec.secret, rec.key))
			}
			if !deleted[key] {
				continue
			}
			// A Retain claim of a deleted Workload: the claim, every object it provisioned
			// and the instance's state are still there.
			rep.RetainedChecked++
			c := &scorev1b1.ResourceClaim{}
			if err := r.c.Get(ctx, client.ObjectKey{Namespace: rec.namespace, Name: rec.name}, c); err != nil {
				rep.RetainedMissing = append(rep.RetainedMissing, fmt.Sprintf("%s: claim %s: %v", key, rec.name, err))
				continue
			}
			for _, o := range append(append([]scorev1b1.AppliedObject(nil), rec.resources...), scorev1b1.AppliedObject{APIVersion: "v1", Kind: "Secret", Namespace: rec.namespace, Name: "score-state-" + rec.instance}) {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
				if err := r.c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, u); err != nil {
					rep.RetainedMissing = append(rep.RetainedMissing, fmt.Sprintf("%s: %s: %v", key, objectID(o.Kind, o.Namespace, o.Name), err))
				}
			}
		}
	}
	// The consumers of one shared instance hold the same credentials.
	byInstance := map[string]map[string][]string{}
	for _, key := range keys {
		if deleted[key] {
			continue
		}
		for _, rec := range r.rec.claims[key] {
			if rec.instance == "" {
				continue
			}
			hash, err := secretHash(ctx, r.c, rec.namespace, rec.secret)
			if err != nil {
				continue
			}
			if byInstance[rec.instance] == nil {
				byInstance[rec.instance] = map[string][]string{}
			}
			byInstance[rec.instance][hash] = append(byInstance[rec.instance][hash], key)
		}
	}
	for instance, hashes := range byInstance {
		if len(hashes) > 1 {
			var groups []string
			for _, ws := range hashes {
				groups = append(groups, strings.Join(ws, " "))
			}
			sort.Strings(groups)
			rep.CredentialsChanged = append(rep.CredentialsChanged, fmt.Sprintf("the consumers of instance %s hold %d different credentials: %s", instance, len(hashes), strings.Join(groups, " | ")))
		}
	}
}

// selfCheck plants what the audit must find — a provisioned object no claim lists and a
// second claim for a Workload's key — audits once more and records what it found, then
// restores the report's own findings.
func (r *run) selfCheck(ctx context.Context) error {
	var list scorev1b1.WorkloadList
	if err := r.c.List(ctx, &list, client.InNamespace("chaos-0")); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("self-check: no Workload in chaos-0")
	}
	w := list.Items[0]
	planted := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos-0", Name: "planted-orphan", Labels: map[string]string{scorev1b1.LabelInstance: "0000000000000000"}}},
		&scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos-0", Name: "planted-duplicate", Labels: map[string]string{scorev1b1.LabelWorkload: w.Name}},
			Spec: scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: w.Name, UID: string(w.UID)}, Key: firstKey(&w), Type: "no-such-type", DeprovisionPolicy: scorev1b1.DeprovisionDelete}},
	}
	for _, o := range planted {
		if err := r.c.Create(ctx, o); err != nil {
			return fmt.Errorf("self-check: planting %s: %w", o.GetName(), err)
		}
	}
	if err := r.plantOnMember(ctx); err != nil {
		return err
	}
	own := *r.report
	r.report.Duplicates, r.report.Orphans, r.report.Audited = nil, nil, map[string]int{}
	r.audit(ctx)
	r.report.PlantedFound = append(append([]string(nil), r.report.Duplicates...), r.report.Orphans...)
	r.report.Duplicates, r.report.Orphans, r.report.Audited = own.Duplicates, own.Orphans, own.Audited
	r.report.CredentialsChecked, r.report.RetainedChecked, r.report.SharedInstances = own.CredentialsChecked, own.RetainedChecked, own.SharedInstances
	r.report.CredentialsChanged, r.report.RetainedMissing, r.report.CopiesChecked = own.CredentialsChanged, own.RetainedMissing, own.CopiesChecked
	r.logf("self-check: the audit found %d planted problems: %s", len(r.report.PlantedFound), strings.Join(r.report.PlantedFound, "; "))
	return nil
}

func firstKey(w *scorev1b1.Workload) string {
	keys := make([]string, 0, len(w.Spec.Resources))
	for k := range w.Spec.Resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}

// recreateRetained creates the deleted Retain Workloads again, as they were, and checks that
// each becomes Ready bound to the retained data: its outputs Secret holds what it held when
// the deleted Workload was first Ready.
func (r *run) recreateRetained(ctx context.Context) {
	rep := r.report
	var again []deletedWorkload
	for _, d := range r.rec.deleted {
		if d.kind == retainedCache {
			again = append(again, d)
		}
	}
	for _, d := range again {
		r.retry(ctx, "creating "+d.namespace+"/"+d.name+" again", func() error { return r.c.Create(ctx, d.workload()) })
	}
	rep.Recreated = len(again)
	deadline := time.Now().Add(3 * time.Minute)
	for _, d := range again {
		key := d.namespace + "/" + d.name
		r.rec.mu.Lock()
		recs := r.rec.claims[key]
		r.rec.mu.Unlock()
		var last string
		for {
			w := &scorev1b1.Workload{}
			err := r.c.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: d.name}, w)
			if err == nil && ready(w) {
				if got, ok := r.rec.read(ctx, w); ok && sameHashes(got, recs) {
					break
				} else if ok {
					last = "Ready, with other credentials than before"
				}
			} else if err != nil {
				last = err.Error()
			} else {
				last = "not Ready"
			}
			if time.Now().After(deadline) {
				rep.RecreatedWrong = append(rep.RecreatedWrong, key+": "+last)
				break
			}
			time.Sleep(time.Second)
		}
	}
	if len(again) > 0 {
		r.logf("%d deleted Retain Workloads created again; %d not Ready with their old credentials", len(again), len(rep.RecreatedWrong))
	}
}

func sameHashes(a, b []claimRecord) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	byKey := map[string]string{}
	for _, c := range a {
		byKey[c.key] = c.hash
	}
	for _, c := range b {
		if byKey[c.key] != c.hash {
			return false
		}
	}
	return true
}
