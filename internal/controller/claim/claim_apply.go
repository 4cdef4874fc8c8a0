package claim

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/applyguard"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/render"
)

// errNotAllowed is an object the provisioner may not create: of a kind the config does not
// allow, or in a namespace other than the instance's.
var errNotAllowed = errors.New("not allowed")

// apply server-side-applies the manifests in stages, labelled with the instance, and returns
// the inventory and each object's health.
func (r *Reconciler) apply(ctx context.Context, c *scorev1b1.ResourceClaim, id provisioner.Identity, manifests []map[string]any) (map[string]bool, []scorev1b1.AppliedObject, error) {
	objs := make([]*unstructured.Unstructured, 0, len(manifests))
	for _, m := range manifests {
		u := &unstructured.Unstructured{Object: m}
		mapping, err := r.Client.RESTMapper().RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: the kind is not served: %w", u.GetKind(), u.GetName(), err)
		}
		if cfg, ok := r.Config.Get(); !ok || !cfg.Config.KindAllowed(u.GroupVersionKind().Group, u.GetKind()) {
			return nil, nil, fmt.Errorf("%w: %s %s is of a kind the platform does not let provisioners create (allowedKinds)", errNotAllowed, u.GetKind(), u.GetName())
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if u.GetNamespace() != "" && u.GetNamespace() != id.Namespace {
				return nil, nil, fmt.Errorf("%w: %s %s: a provisioner may only create objects in the instance's namespace %s", errNotAllowed, u.GetKind(), u.GetName(), id.Namespace)
			}
			u.SetNamespace(id.Namespace)
		}
		setLabel(u, provisioner.LabelInstance, id.Hash())
		objs = append(objs, u)
	}
	sort.SliceStable(objs, func(i, j int) bool { return render.Stage(objs[i]) < render.Stage(objs[j]) })

	inventory := map[string]bool{}
	applied := make([]scorev1b1.AppliedObject, 0, len(objs))
	for _, u := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		err := r.watcher.Get(ctx, r.Client, client.ObjectKeyFromObject(u), live)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("reading %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		// Watched before it is applied, so no change after the apply can be missed; the first
		// read of a kind came from the API server, so a kind the provisioner may not read was
		// refused there, before any watch.
		r.watcher.Ensure(ctx, u.GroupVersionKind())
		if owner := live.GetLabels()[provisioner.LabelInstance]; err == nil && owner != "" {
			// An object several instances produce (a broker every topic of the namespace
			// uses) keeps the label of the instance that created it; relabelling it on every
			// run would rewrite it back and forth. Its other users find it by their inventory.
			setLabel(u, provisioner.LabelInstance, owner)
		}
		if err == nil && applyguard.Unchanged(u, live) {
			u = live // nothing to write: a no-op apply is still a write
		} else if err := r.Client.Patch(ctx, u, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return nil, nil, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		inventory[objectKey(u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())] = true
		state, message := r.Config.Health().Judge(u)
		applied = append(applied, scorev1b1.AppliedObject{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Health: state, Message: message})
	}
	return inventory, applied, nil
}

func setLabel(u *unstructured.Unstructured, key, value string) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	u.SetLabels(labels)
}

func objectKey(apiVersion, kind, namespace, name string) string {
	return apiVersion + "/" + kind + "/" + namespace + "/" + name
}

// prune deletes what an earlier run applied and this one did not, once this run applied
// completely.
func (r *Reconciler) prune(ctx context.Context, c *scorev1b1.ResourceClaim, keep map[string]bool) error {
	for _, o := range c.Status.Resources {
		if keep[objectKey(o.APIVersion, o.Kind, o.Namespace, o.Name)] {
			continue
		}
		if used, err := r.usedByOthers(ctx, c, o); err != nil || used {
			if err != nil {
				return err
			}
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Pruning an object the provisioner no longer produces", "kind", o.Kind, "name", o.Name)
		if err := r.deleteObject(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) deleteObject(ctx context.Context, o scorev1b1.AppliedObject) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
	u.SetNamespace(o.Namespace)
	u.SetName(o.Name)
	if err := r.Client.Delete(ctx, u, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return fmt.Errorf("deleting %s %s: %w", o.Kind, o.Name, err)
	}
	return nil
}

// exists reports whether an inventory object is still there.
func (r *Reconciler) exists(ctx context.Context, o scorev1b1.AppliedObject) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, u)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, err
	}
}

// usedByOthers reports whether another live claim lists o in its inventory: an object several
// instances produce stays until the last of them lets it go.
func (r *Reconciler) usedByOthers(ctx context.Context, c *scorev1b1.ResourceClaim, o scorev1b1.AppliedObject) (bool, error) {
	var list scorev1b1.ResourceClaimList
	// Cluster-wide: the consumers of an instance shared across namespaces live in several.
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexResource: objectKey(o.APIVersion, o.Kind, o.Namespace, o.Name)}); err != nil {
		return false, err
	}
	for _, other := range list.Items {
		if other.UID != c.UID && other.DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}
