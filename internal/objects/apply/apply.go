// Package apply is the one way objects reach a cluster. The runtime applies what a backend
// template rendered, the provisioner what a provisioner definition produced, and both through
// it; the offline render prepares through the same pure step (internal/objects/prepare), so it
// shows exactly what the controllers apply.
//
// An apply has a pure step, prepare.Prepare (kind allowed, pods within the pod rules,
// namespace, identity labels and annotations, owner reference, stage), and this cluster step,
// Applier.Apply: read what exists (from the watch's cache where it holds the object), refuse an
// object that belongs to another owner, start the kind's watch, server-side-apply in stages —
// definitions first, waiting until each CustomResourceDefinition is Established before the
// objects of later stages are applied — skip an apply that would change nothing, and judge each
// object's health. The inventory it returns is keyed by group, kind, namespace and name, never
// by version (internal/objects/inventory), so an object a template moves to another served
// version of its kind is the same object; Prune deletes what an earlier inventory listed and
// the new one does not, with a hook for objects another consumer still uses; KeepRuns keeps a
// run's history.
//
// Why not fluxcd/pkg/ssa as the engine (it is where the staging, the Established wait and
// the version-free inventory come from): it decides what changed with a dry-run apply of
// every object on every pass, one API request per object that the audit log records as a
// patch, where this applier compares with the watch's cache and sends nothing when nothing
// changed (zero writes at rest is a promise of the project, measured by the benchmark); it
// waits for health by polling, where the controllers here are woken by watches; and its
// ownership marks are its own labels, where ours are the Workload's UID and the instance's
// identity hash, which the chaos audit and the conflict rules read.
package apply

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/health"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/inventory"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/prepare"
)

// Applier applies sets of objects into one cluster under one field manager.
type Applier struct {
	// Client reaches the cluster: its writes, its API reads and its REST mapper.
	Client client.Client
	// FieldManager is the server-side apply field manager.
	FieldManager string
	// Watcher watches each applied kind from its first apply and serves reads from the
	// watch's cache; nil reads from the API server and watches nothing.
	Watcher *Watcher
	// Judge decides an object's health and a message; nil is kstatus.
	Judge func(*unstructured.Unstructured) (string, string)
	// Allowed says whether a kind may be applied; nil allows every kind.
	Allowed func(group, kind string) bool
	// CreateUnseen creates an object of a watched kind that the watch's cache does not hold
	// with a create-only apply, without reading it from the API server first: an object that
	// exists after all (ours, the cache a moment behind; or another owner's, which no cache of
	// ours holds) makes the create fail, writing nothing, and is then read and judged. A set
	// can then be refused for such an object after its other new objects were created: they
	// are ours, and listed (Result.Objects). For a controller whose objects' names carry an
	// identity no one else's do (the provisioner's), which an object of another owner holds
	// only when someone made it so; the runtime reads first.
	CreateUnseen bool
}

// OwnedElsewhere is an object that exists and does not belong to the marks' owner.
type OwnedElsewhere struct {
	GroupKind schema.GroupKind
	Namespace string
	Name      string
	// OwnerValue is the object's owner annotation ("" when it has none: not created by us);
	// OwnerName the owner's name, when the object's OwnerNameLabel says it.
	OwnerValue, OwnerName string
	// Maker is the marks' Maker: what would have made the object ("" the runtime).
	Maker string
}

func (e *OwnedElsewhere) Error() string {
	if e.Maker != "" && e.OwnerValue == "" {
		return fmt.Sprintf("%s %s exists and was not created by %s", e.GroupKind.Kind, e.Name, e.Maker)
	}
	return ConflictMessage(e.GroupKind.Kind, e.Name, e.OwnerValue, e.OwnerName)
}

// Is makes an OwnedElsewhere a prepare.ErrOwnedElsewhere, for the pure packages that decide on
// it.
func (e *OwnedElsewhere) Is(target error) bool { return target == prepare.ErrOwnedElsewhere }

// ConflictMessage says that an object (kind and name) exists and belongs to another owner
// (ownerValue, and its name when known), or was not created by us (ownerValue empty).
func ConflictMessage(kind, name, ownerValue, ownerName string) string {
	switch {
	case ownerValue == "":
		return fmt.Sprintf("%s %s exists and was not created by the runtime", kind, name)
	case ownerName == "":
		return fmt.Sprintf("%s %s exists and belongs to another workload", kind, name)
	default:
		return fmt.Sprintf("%s %s exists and belongs to workload %s", kind, name, ownerName)
	}
}

// Result is what an apply did.
type Result struct {
	// Objects is the inventory of what was applied, in apply order, each with its health.
	Objects []scorev1b1.AppliedObject
	// Live are the applied objects as the API server has them, in the same order.
	Live []*unstructured.Unstructured
	// Waiting names the definitions the later stages wait for (a CustomResourceDefinition not
	// Established yet); the objects of those stages were not applied. Empty when everything
	// was. The definition's watch brings the owner back when it is ready.
	Waiting []string
}

// Complete reports whether every object of the set was applied.
func (r Result) Complete() bool { return len(r.Waiting) == 0 }

// parallel bounds the requests one apply has in flight: its reads, and the applies of a stage.
const parallel = 8

// createOnly is the resourceVersion a server-side apply carries to create an object only: on
// an object that does not exist, the apply creates it (kube-apiserver's registry, that of the
// built-in kinds and of custom resources, does not check the version of an object it creates;
// the object gets an Apply managed-fields entry, as any apply's); on one that exists, whoever's
// it is, the version differs and the apply fails with a conflict, writing nothing. It is the
// largest revision etcd can hold (an int64), which no object ever reaches. Checked on a real
// API server by test/integration/firstpass (and by hand: a POST create instead leaves an
// Update entry, whose fields a later apply that drops them does not remove).
const createOnly = "9223372036854775807"

// Apply prepares objs with marks and applies them in stages. Before anything is written, every
// object that already exists is checked: one that belongs to another owner refuses the whole
// set (*OwnedElsewhere), so nothing is half-applied over someone else's object. It stops
// after the definitions stage while a CustomResourceDefinition of the set is not Established
// (Result.Waiting). With CreateUnseen, an object the cache does not hold is not read first
// (see there).
//
// The reads of the set run at once, and so do the applies of each stage (at most parallel in
// flight); stages follow each other. An object read as absent is created with a create-only
// apply (createOnly), so one made since the read, by anyone, is never written over: the apply
// fails, the object is read from the API server, refused if it is another owner's, and applied
// if it is ours. Results are in the order of the prepared objects; of several errors, the one
// of the earliest object is returned, with everything applied before the apply stopped.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, marks prepare.Marks) (Result, error) {
	return a.ApplyAfter(ctx, nil, objs, marks)
}

// ApplyAfter is Apply with first, a write that may overlap the apply's reads and its creations
// of objects that do not exist in the first stage, and that every other write waits for: no
// object that exists is changed, and no later stage is applied, before first returned nil. Its
// error stops the apply and is returned before any other. The provisioner keeps an instance's
// state with it: the state holds the credentials its objects are made with, and must be
// durable before anything that uses them is applied, and before anything made with other
// credentials (another claim's of the same instance, which wrote its state first) is changed.
// A nil first is Apply.
func (a *Applier) ApplyAfter(ctx context.Context, first func(context.Context) error, objs []*unstructured.Unstructured, marks prepare.Marks) (Result, error) {
	g := startGate(ctx, first)
	res, err := a.apply(ctx, g, objs, marks)
	if gerr := g.wait(); gerr != nil {
		return res, gerr
	}
	return res, err
}

func (a *Applier) apply(ctx context.Context, g *gate, objs []*unstructured.Unstructured, marks prepare.Marks) (Result, error) {
	prepared, err := prepare.Prepare(prepare.Input{Objects: objs, Marks: marks, Scope: a.scope, Allowed: a.Allowed})
	if err != nil {
		return Result{}, err
	}
	// Read and guard everything first.
	live := make([]*unstructured.Unstructured, len(prepared))
	if err := each(len(prepared), func(i int) (err error) {
		live[i], err = a.readFirst(ctx, prepared[i], marks)
		return err
	}); err != nil {
		return Result{}, err
	}
	var res Result
	for start, stage := 0, 0; start < len(prepared); start, stage = end(prepared, start), stage+1 {
		if len(res.Waiting) > 0 {
			break // the definitions this stage may need are not served yet
		}
		if stage > 0 {
			if err := g.wait(); err != nil {
				return res, err
			}
		}
		stop := end(prepared, start)
		current := make([]*unstructured.Unstructured, stop-start)
		err := each(stop-start, func(i int) (err error) {
			current[i], err = a.applyOne(ctx, g, prepared[start+i], live[start+i], marks)
			return err
		})
		for i, o := range prepared[start:stop] {
			if current[i] == nil {
				continue // not applied: its error, or another's
			}
			state, message := a.judge(current[i])
			res.Objects = append(res.Objects, inventory.Applied(current[i], state, message))
			res.Live = append(res.Live, current[i])
			if o.GroupVersionKind().GroupKind() == prepare.CRDKind && !established(current[i]) {
				res.Waiting = append(res.Waiting, "CustomResourceDefinition "+current[i].GetName())
			}
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// end is the index after the stage of prepared[start] (prepared is ordered by stage).
func end(prepared []prepare.Object, start int) int {
	i := start
	for i < len(prepared) && prepared[i].Stage == prepared[start].Stage {
		i++
	}
	return i
}

// each calls f for 0..n-1, at most parallel at once, and returns the error of the lowest index
// that failed: the one a loop in order would have stopped at, whichever failed first in time.
// Every call runs to its end (none is cancelled by another's error), so that what was written
// is known.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(parallel)
	for i := range n {
		g.Go(func() error {
			errs[i] = f(i)
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readFirst reads what exists of o before anything is written: nothing, taken as absent, when
// the Applier creates unseen objects, o's kind is watched and the watch's cache does not hold
// it (CreateUnseen); otherwise what read returns.
func (a *Applier) readFirst(ctx context.Context, o prepare.Object, marks prepare.Marks) (*unstructured.Unstructured, error) {
	if a.CreateUnseen {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		found, watched, err := a.Watcher.Lookup(ctx, client.ObjectKeyFromObject(o), u)
		if err == nil && watched && !found {
			return nil, nil
		}
	}
	return a.read(ctx, o, marks)
}

// applyOne applies o, read as live (nil: not found, or not read), and returns it as the API
// server has it. An object read as absent is created with a create-only apply, which may
// overlap the gate; one that exists after all is read from the API server and applied, or
// refused, once the gate is passed, as is any object that exists.
func (a *Applier) applyOne(ctx context.Context, g *gate, o prepare.Object, live *unstructured.Unstructured, marks prepare.Marks) (*unstructured.Unstructured, error) {
	// Watched before it is applied, so no change after the apply can be missed (a kind a
	// definition of this set made served is watched now, its read having found nothing).
	a.Watcher.Ensure(ctx, o.GroupVersionKind())
	if live == nil {
		u := o.Unstructured.DeepCopy()
		u.SetResourceVersion(createOnly)
		err := a.Client.Patch(ctx, u, client.Apply, client.FieldOwner(a.FieldManager), client.ForceOwnership)
		if err == nil {
			return u, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		// It exists: made since it was read (by another pass of ours, or by anyone), or ours
		// where the cache was behind or did not hold it (unseen). Whose it is, the API server
		// says.
		if err := g.wait(); err != nil {
			return nil, err
		}
		if live, err = a.readAPIServer(ctx, o, marks); err != nil {
			return nil, err
		}
	} else if err := g.wait(); err != nil {
		return nil, err
	}
	if Unchanged(o.Unstructured, live) {
		return live, nil
	}
	u := o.Unstructured
	if err := a.Client.Patch(ctx, u, client.Apply, client.FieldOwner(a.FieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return u, nil
}

// gate is a write the applies wait for (ApplyAfter's first), started at once.
type gate struct {
	done chan struct{}
	err  error
}

func startGate(ctx context.Context, first func(context.Context) error) *gate {
	g := &gate{done: make(chan struct{})}
	if first == nil {
		close(g.done)
		return g
	}
	go func() {
		defer close(g.done)
		g.err = first(ctx)
	}()
	return g
}

// wait returns first's error once it returned.
func (g *gate) wait() error {
	<-g.done
	return g.err
}

// read returns the object as it exists (nil when it does not) and applies the marks' rules
// for an existing object: refused when another owner's, keeping KeepLabel's value.
func (a *Applier) read(ctx context.Context, o prepare.Object, marks prepare.Marks) (*unstructured.Unstructured, error) {
	return a.readWith(ctx, o, marks, func(key client.ObjectKey, u *unstructured.Unstructured) error {
		return a.Watcher.Get(ctx, a.Client, key, u)
	})
}

// readAPIServer is read from the API server alone: for an object a create-only apply found,
// which the cache may not hold yet.
func (a *Applier) readAPIServer(ctx context.Context, o prepare.Object, marks prepare.Marks) (*unstructured.Unstructured, error) {
	live, err := a.readWith(ctx, o, marks, func(key client.ObjectKey, u *unstructured.Unstructured) error {
		return a.Client.Get(ctx, key, u)
	})
	if err == nil && live == nil {
		// Gone again since the apply found it: a conflict to retry, never a write over
		// whatever comes next.
		return nil, apierrors.NewConflict(schema.GroupResource{Group: o.GroupVersionKind().Group, Resource: o.GetKind()}, o.GetName(),
			errors.New("the object was deleted while it was created"))
	}
	return live, err
}

func (a *Applier) readWith(ctx context.Context, o prepare.Object, marks prepare.Marks, get func(client.ObjectKey, *unstructured.Unstructured) error) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	err := get(client.ObjectKeyFromObject(o), live)
	switch {
	case meta.IsNoMatchError(err):
		return nil, nil // of a kind a definition of the same set has not made served yet
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	// Watched from its first read, which came from the API server (so a kind the controller
	// may not read was refused there, before any watch): the deletion of an object that
	// refuses the set, like any change of one it applies, brings the owner back.
	a.Watcher.Ensure(ctx, o.GroupVersionKind())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if !marks.Ours(live) {
		owner := live.GetAnnotations()[marks.OwnerAnnotation]
		e := &OwnedElsewhere{GroupKind: o.GroupVersionKind().GroupKind(), Namespace: live.GetNamespace(), Name: live.GetName(), OwnerValue: owner, Maker: marks.Maker}
		if owner != "" && marks.OwnerNameLabel != "" {
			e.OwnerName = live.GetLabels()[marks.OwnerNameLabel]
		}
		return nil, e
	}
	if key := marks.KeepLabel; key != "" {
		if value := live.GetLabels()[key]; value != "" {
			labels := o.GetLabels()
			labels[key] = value
			o.SetLabels(labels)
		}
	}
	return live, nil
}

// scope asks the cluster's REST mapper.
func (a *Applier) scope(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := a.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return false, fmt.Errorf("%w: %w", prepare.ErrNotServed, err)
		}
		return false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (a *Applier) judge(u *unstructured.Unstructured) (string, string) {
	if a.Judge != nil {
		return a.Judge(u)
	}
	var none *health.Checker
	return none.Judge(u)
}

// established reports whether a CustomResourceDefinition's kind is served.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// Prune deletes what previous lists and current does not (by Key), once current was applied
// completely; inUse, when set, keeps an object another consumer still lists. An object of a
// kind no longer served is gone with its kind, and skipped.
func (a *Applier) Prune(ctx context.Context, previous, current []scorev1b1.AppliedObject, inUse func(scorev1b1.AppliedObject) (bool, error)) error {
	keep := make(map[string]bool, len(current))
	for _, o := range current {
		keep[inventory.Key(o)] = true
	}
	for _, o := range previous {
		if keep[inventory.Key(o)] {
			continue
		}
		if inUse != nil {
			used, err := inUse(o)
			if err != nil {
				return err
			}
			if used {
				continue
			}
		}
		if _, err := a.Delete(ctx, o); err != nil {
			return fmt.Errorf("pruning: %w", err)
		}
	}
	return nil
}

// Delete deletes an inventory object (in the background: its dependants follow) and reports
// whether it still existed. It is addressed by group and kind, with whatever version the
// cluster serves now; a kind no longer served has no objects left. An entry that records the
// object's UID deletes that object only (a precondition the API server checks): another
// object created under the name since — by a tenant, or by another owner after ours went —
// is not ours, is left alone and reported gone. An entry from before UIDs were recorded is
// deleted by name.
func (a *Applier) Delete(ctx context.Context, o scorev1b1.AppliedObject) (bool, error) {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", o.Kind, o.Name, err)
	}
	mapping, err := a.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind})
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", o.Kind, o.Name, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	u.SetNamespace(o.Namespace)
	u.SetName(o.Name)
	opts := []client.DeleteOption{client.PropagationPolicy("Background")}
	if o.UID != "" {
		opts = append(opts, client.Preconditions{UID: ptr.To(types.UID(o.UID))})
	}
	switch err := a.Client.Delete(ctx, u, opts...); {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return false, nil
	case o.UID != "" && apierrors.IsConflict(err):
		return false, nil // the UID precondition: another object has the name now
	case err != nil:
		return false, fmt.Errorf("deleting %s %s: %w", o.Kind, o.Name, err)
	}
	return true, nil
}

// Released is what Release did with an inventory.
type Released struct {
	// Remaining names the objects that still existed when deleted ("Kind name"): the caller
	// waits for them to go.
	Remaining []string
	// Kept are the entries inUse kept: another consumer's still, so not deleted. What goes
	// with the instance (its state) must stay while any is kept.
	Kept []scorev1b1.AppliedObject
}

// Release deletes the objects of an inventory that inUse does not keep, and says what it did.
// Each kind is watched before its objects are deleted, so their deletion brings the caller
// back even in a process that never applied the kind (a controller restarted in the middle of
// a release). The deletions are in flight together (at most parallel at once): a plan's or an
// instance's objects are independent of each other, and a cluster that comes back with many
// to delete (a lost member's moved Workloads) is cleared a round trip per Workload, not per
// object. Every deletion runs to its end; the error returned is the first object's in order.
func (a *Applier) Release(ctx context.Context, objs []scorev1b1.AppliedObject, inUse func(scorev1b1.AppliedObject) (bool, error)) (Released, error) {
	var out Released
	var deleting []scorev1b1.AppliedObject
	for _, o := range objs {
		if gv, err := schema.ParseGroupVersion(o.APIVersion); err == nil {
			if mapping, err := a.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: o.Kind}); err == nil {
				a.Watcher.Ensure(ctx, mapping.GroupVersionKind)
			}
		}
		if inUse != nil {
			used, err := inUse(o)
			if err != nil {
				return Released{}, err
			}
			if used {
				out.Kept = append(out.Kept, o)
				continue
			}
		}
		deleting = append(deleting, o)
	}
	existed := make([]bool, len(deleting))
	if err := each(len(deleting), func(i int) (err error) {
		existed[i], err = a.Delete(ctx, deleting[i])
		return err
	}); err != nil {
		return Released{}, err
	}
	for i, o := range deleting {
		if existed[i] {
			out.Remaining = append(out.Remaining, o.Kind+" "+o.Name)
		}
	}
	return out, nil
}

// IsRefusal reports whether err refuses the set for good until its input changes (a kind or
// namespace not allowed, a kind not served, another owner's object), as against a failure
// worth retrying.
func IsRefusal(err error) bool {
	var owned *OwnedElsewhere
	return errors.Is(err, prepare.ErrNotAllowed) || errors.Is(err, prepare.ErrNotServed) || errors.As(err, &owned)
}
