package provisioner

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
)

// sharedStateSecret keeps score-k8s's shared state for a namespace.
const sharedStateSecret = "score-provisioner-shared-state"

// instanceState is what survives restarts: the instance's state and the namespace's shared
// state. Both may hold generated credentials, so both live in Secrets, never in status.
type instanceState struct {
	State  map[string]any
	Shared map[string]any
	// stateSecret and sharedSecret are the Secrets the two were read from (nil when they did
	// not exist): saveState writes on top of what was read, or not at all.
	stateSecret, sharedSecret *corev1.Secret
}

func (r *Reconciler) loadState(ctx context.Context, id provisioning.Identity) (instanceState, error) {
	var st instanceState
	var err error
	if st.State, st.stateSecret, err = r.readJSONSecret(ctx, id.Namespace, id.StateSecretName()); err != nil {
		return st, err
	}
	if st.Shared, st.sharedSecret, err = r.readJSONSecret(ctx, id.Namespace, sharedStateSecret); err != nil {
		return st, err
	}
	return st, nil
}

func (r *Reconciler) readJSONSecret(ctx context.Context, namespace, name string) (map[string]any, *corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return map[string]any{}, nil, nil
		}
		return nil, nil, fmt.Errorf("reading state %s: %w", name, err)
	}
	m := map[string]any{}
	if raw := s.Data["state.json"]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nil, fmt.Errorf("state %s is not JSON: %w", name, err)
		}
	}
	return m, s, nil
}

// saveState writes the new state (and the merged shared state) when they changed. The state
// Secret is named by the instance, not the claim, and has no owner: a Retain or Orphan claim
// leaves it, and a later claim of the same identity picks it up with the same credentials.
// Claims sharing an instance provision it concurrently: each writes on top of the state it
// read (created if it read none, updated at the version it read), so the one that read
// before the other wrote gets a conflict and provisions again from the state written, and
// never replaces credentials another claim has already published.
func (r *Reconciler) saveState(ctx context.Context, id provisioning.Identity, prev instanceState, res provisioning.Result) error {
	if !values.SameJSON(prev.State, res.State) {
		if err := r.writeJSONSecret(ctx, id.Namespace, id.StateSecretName(), prev.stateSecret, res.State, map[string]string{scorev1b1.LabelInstance: id.Hash()}); err != nil {
			return err
		}
	}
	if len(res.Shared) > 0 {
		merged := provisioning.PatchMap(prev.Shared, res.Shared)
		if !values.SameJSON(prev.Shared, merged) {
			if err := r.writeJSONSecret(ctx, id.Namespace, sharedStateSecret, prev.sharedSecret, merged, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeJSONSecret creates the Secret name when read was nil, else updates read at its
// version: AlreadyExists and Conflict say another writer came first.
func (r *Reconciler) writeJSONSecret(ctx context.Context, namespace, name string, read *corev1.Secret, v map[string]any, labels map[string]string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if read == nil {
		err = r.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"state.json": raw}})
	} else {
		s := read.DeepCopy()
		s.Data = map[string][]byte{"state.json": raw}
		err = r.Client.Update(ctx, s)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return fmt.Errorf("state %s was written by another claim of the instance since it was read; provisioning again from it: %w", name, err)
	}
	return err
}

// templateData gathers what score-k8s passes to templates: the claim, the instance's state,
// the source workload's metadata and the network services of the Workloads of the instance's
// namespace (the claim's own, unless the platform shares the instance from another).
func (r *Reconciler) templateData(ctx context.Context, c *scorev1b1.ResourceClaim, def orchconfig.Provisioner, id provisioning.Identity, class string, params map[string]any, st instanceState) (provisioning.Data, error) {
	metadata, _ := values.Object(c.Spec.Metadata)
	in := provisioning.DataInput{Identity: id, Class: class, Params: params, Metadata: metadata, State: st.State, Shared: st.Shared,
		Source: c.Spec.WorkloadRef.Name, Sharing: def.Sharing}
	var w scorev1b1.Workload
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.WorkloadRef.Name}, &w); {
	case err == nil:
		in.SourceWorkload = &w
	case !apierrors.IsNotFound(err):
		return provisioning.Data{}, fmt.Errorf("reading workload %s: %w", c.Spec.WorkloadRef.Name, err)
	}
	if !r.readers.of(r.Config)(def.URI) {
		// A definition that cannot read other Workloads' ports sees its own Workload only:
		// listing the namespace's Workloads on every pass cost O(N) per claim, O(N²) for N
		// claims of one namespace (57% of the provisioner's CPU at N=5,000, make bench).
		if in.SourceWorkload != nil {
			in.Workloads = []*scorev1b1.Workload{in.SourceWorkload}
		}
		return provisioning.NewData(in), nil
	}
	var workloads scorev1b1.WorkloadList
	// Read only (NewData copies what it keeps): no deep copy of every Workload of the
	// namespace on every pass.
	if err := r.Client.List(ctx, &workloads, client.InNamespace(id.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return provisioning.Data{}, fmt.Errorf("listing workloads: %w", err)
	}
	for i := range workloads.Items {
		in.Workloads = append(in.Workloads, &workloads.Items[i])
	}
	return provisioning.NewData(in), nil
}
