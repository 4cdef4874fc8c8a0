// Package statuspatch writes a reconciler's status once per pass, at the end, and only when
// it changed: the reconciler keeps the object as read (Begin), changes its status as it
// decides, and patches in a defer (Finish). An unconditional write would bump the
// resourceVersion, trigger the object's own watch and loop, and break the promise of zero
// writes when nothing changed. The orchestrator, the provisioner, the runtime and the rollout
// controller all write their status through it (the idea of Flux's patch helper).
package statuspatch

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recorder learns of each status write: the version it replaced and the one it produced
// (ownwrites.Tracker, so a later pass can tell a cached copy older than the write).
type Recorder interface {
	Wrote(uid types.UID, replaced, produced string)
}

// Patch is one pass's status write.
type Patch struct {
	obj, before client.Object
}

// Begin keeps a copy of obj as read. obj must be a pointer to a struct with a Status field.
func Begin(obj client.Object) *Patch {
	return &Patch{obj: obj, before: obj.DeepCopyObject().(client.Object)}
}

// Before is the object as read.
func (p *Patch) Before() client.Object { return p.before }

// Changed reports whether the status differs from the status as read.
func (p *Patch) Changed() bool {
	return !equality.Semantic.DeepEqual(status(p.before), status(p.obj))
}

// Option changes how Finish writes.
type Option struct {
	merge client.MergeFromOption
}

// AtVersionRead makes the write conditional on the object's resourceVersion as read (or as
// Rebase made it the reference): when another writer changed the object since, the API server
// refuses it with a Conflict, which Finish returns, and nothing is written. For a writer
// whose status is decided from the whole object as read, and must not be written over a newer
// one (the rollout controller: a wave passed on a stale copy would be passed twice). Without
// it, a concurrent writer's change is no conflict.
func AtVersionRead() Option {
	return Option{merge: client.MergeFromWithOptimisticLock{}}
}

// Finish patches the status when it changed (a merge patch of the difference, so it never
// overwrites fields it did not change), tells rec of the write, and reports whether it wrote.
// An object that is gone is no error.
func (p *Patch) Finish(ctx context.Context, c client.Client, rec Recorder, opts ...Option) (bool, error) {
	if !p.Changed() {
		return false, nil
	}
	replaced := p.obj.GetResourceVersion()
	var merge []client.MergeFromOption
	for _, o := range opts {
		merge = append(merge, o.merge)
	}
	if err := c.Status().Patch(ctx, p.obj, client.MergeFromWithOptions(p.before, merge...)); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if rec != nil {
		rec.Wrote(p.obj.GetUID(), replaced, p.obj.GetResourceVersion())
	}
	return true, nil
}

// Rebase makes the object's current metadata (after a write of its own, such as a finalizer
// patch) the reference for the status comparison, keeping the status as read.
func (p *Patch) Rebase() {
	st := reflect.ValueOf(p.before).Elem().FieldByName("Status")
	saved := reflect.New(st.Type()).Elem()
	saved.Set(st)
	p.before = p.obj.DeepCopyObject().(client.Object)
	reflect.ValueOf(p.before).Elem().FieldByName("Status").Set(saved)
}

func status(obj client.Object) any {
	return reflect.ValueOf(obj).Elem().FieldByName("Status").Interface()
}
