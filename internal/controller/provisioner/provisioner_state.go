package provisioner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/statesign"
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

// loadState reads the instance's state, and the namespace's shared state when shared (the
// definition may read or write it, readsShared).
func (r *Reconciler) loadState(ctx context.Context, id provisioning.Identity, shared bool) (instanceState, error) {
	st := instanceState{Shared: map[string]any{}}
	var err error
	if st.State, st.stateSecret, err = r.readState(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.StateSecretName()}); err != nil {
		return st, err
	}
	if !shared {
		return st, nil
	}
	if st.Shared, st.sharedSecret, err = r.readJSONSecret(ctx, id.Namespace, sharedStateSecret); err != nil {
		return st, err
	}
	return st, nil
}

// namesShared matches a template that names the shared state (.Shared, index . "Shared"), not
// the word in a comment.
var namesShared = regexp.MustCompile(`\.Shared\b|"Shared"`)

// readsShared reports whether a definition may read or write the namespace's shared state: a
// template:// definition with a shared template, or whose templates name .Shared or hand on
// their whole data. Any other strategy receives the whole data, and may. The shared state
// Secret carries no label our caches select, so reading it is a request to the API server, on
// every pass over every claim of a definition that never looks at it (make bench).
func readsShared(d orchconfig.Provisioner) bool {
	if !strings.HasPrefix(d.URI, "template://") || strings.TrimSpace(d.Shared) != "" {
		return true
	}
	for _, tpl := range []string{d.Init, d.State, d.Outputs, d.Manifests} {
		if namesShared.MatchString(tpl) || wholeData.MatchString(tpl) {
			return true
		}
	}
	return false
}

// readState reads an instance's state Secret from the provisioned objects' cache, its absence
// included, once that cache watches Secrets: a state Secret carries the instance label the
// cache selects from its creation, and saveState writes on a precondition, so a cache a
// moment behind (or a Secret that lost its label) makes the write fail; the state Secrets in
// races are read from the API server on the next pass. Reading the API server first would add
// a read that every pass over a new claim waits for (make bench).
func (r *Reconciler) readState(ctx context.Context, key client.ObjectKey) (map[string]any, *corev1.Secret, error) {
	if r.applier != nil && !r.raced.take(key) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		found, watched, err := r.applier.Watcher.Lookup(ctx, key, u)
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("reading state %s: %w", key.Name, err)
		case watched && !found:
			return map[string]any{}, nil, nil
		case watched:
			s := &corev1.Secret{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
				return nil, nil, fmt.Errorf("reading state %s: %w", key.Name, err)
			}
			return r.decodeState(ctx, s)
		}
	}
	return r.readJSONSecret(ctx, key.Namespace, key.Name)
}

func (r *Reconciler) readJSONSecret(ctx context.Context, namespace, name string) (map[string]any, *corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return map[string]any{}, nil, nil
		}
		return nil, nil, fmt.Errorf("reading state %s: %w", name, err)
	}
	return r.decodeState(ctx, s)
}

// decodeState is the JSON a state Secret holds, once its signature says the provisioner wrote
// it (provisioner_statekey.go); one it did not write is refused, never read.
func (r *Reconciler) decodeState(ctx context.Context, s *corev1.Secret) (map[string]any, *corev1.Secret, error) {
	k, err := r.signingKey(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !k.written(s) {
		return nil, nil, notOurState(s)
	}
	m := map[string]any{}
	if raw := s.Data["state.json"]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nil, fmt.Errorf("state %s is not JSON: %w", s.Name, err)
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
// never replaces credentials another claim has already published. st becomes what was
// written, so that a later write of the same pass is made on top of it.
func (r *Reconciler) saveState(ctx context.Context, id provisioning.Identity, st *instanceState, res provisioning.Result) error {
	// Written also when the Secret lost its label: readState takes its absence from a cache
	// that selects by it.
	unlabelled := st.stateSecret != nil && st.stateSecret.Labels[scorev1b1.LabelInstance] != id.Hash()
	if !values.SameJSON(st.State, res.State) || unlabelled {
		key := client.ObjectKey{Namespace: id.Namespace, Name: id.StateSecretName()}
		written, err := r.writeJSONSecret(ctx, key.Namespace, key.Name, st.stateSecret, res.State, map[string]string{scorev1b1.LabelInstance: id.Hash()})
		if errors.Is(err, errStateRaced) {
			r.raced.add(key)
		}
		if err != nil {
			return err
		}
		st.State, st.stateSecret = res.State, written
	}
	if len(res.Shared) > 0 {
		merged := provisioning.PatchMap(st.Shared, res.Shared)
		if !values.SameJSON(st.Shared, merged) {
			written, err := r.writeJSONSecret(ctx, id.Namespace, sharedStateSecret, st.sharedSecret, merged, nil)
			if err != nil {
				return err
			}
			st.Shared, st.sharedSecret = merged, written
		}
	}
	return nil
}

// writeJSONSecret creates the Secret name when read was nil, else updates read at its
// version, and returns the Secret written: AlreadyExists and Conflict say another writer came
// first.
func (r *Reconciler) writeJSONSecret(ctx context.Context, namespace, name string, read *corev1.Secret, v map[string]any, labels map[string]string) (*corev1.Secret, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	key, err := r.signingKey(ctx)
	if err != nil {
		return nil, err
	}
	var s *corev1.Secret
	if read == nil {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"state.json": raw}}
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, statesign.Annotation, key.mac(namespace, name, raw))
		err = r.Client.Create(ctx, s)
	} else {
		s = read.DeepCopy()
		s.Data = map[string][]byte{"state.json": raw}
		for k, v := range labels {
			metav1.SetMetaDataLabel(&s.ObjectMeta, k, v)
		}
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, statesign.Annotation, key.mac(namespace, name, raw))
		err = r.Client.Update(ctx, s)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return nil, fmt.Errorf("state %s %w; provisioning again from what it holds: %w", name, errStateRaced, err)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// errStateRaced is a state write that found the Secret other than it was read.
var errStateRaced = errors.New("is not as it was read (another claim of the instance wrote it, or the cache was behind)")

// stateRaces are the state Secrets whose last write found them other than read (another claim
// of the instance wrote first, or the cache did not hold them): readState reads each from the
// API server on the next pass, which takes it off: the failed write requeues its claim, so an
// entry lasts until that pass.
type stateRaces struct {
	mu   sync.Mutex
	keys map[client.ObjectKey]bool
}

func (s *stateRaces) add(key client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[client.ObjectKey]bool{}
	}
	s.keys[key] = true
}

// take reports whether key raced, and forgets it.
func (s *stateRaces) take(key client.ObjectKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	raced := s.keys[key]
	delete(s.keys, key)
	return raced
}

// templateData gathers what the data score-k8s passes to templates is made of
// (provisioning.NewData): the claim, the instance's state, the source workload's metadata and
// the network services of the Workloads of the instance's namespace (the claim's own, unless
// the platform shares the instance from another).
func (r *Reconciler) templateData(ctx context.Context, c *scorev1b1.ResourceClaim, def orchconfig.Provisioner, id provisioning.Identity, class string, params map[string]any, st instanceState) (provisioning.DataInput, error) {
	metadata, _ := values.Object(c.Spec.Metadata)
	in := provisioning.DataInput{Identity: id, Class: class, Params: params, Metadata: metadata, State: st.State, Shared: st.Shared,
		Source: c.Spec.WorkloadRef.Name, Sharing: def.Sharing}
	var w scorev1b1.Workload
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.WorkloadRef.Name}, &w); {
	case err == nil:
		in.SourceWorkload = &w
	case !apierrors.IsNotFound(err):
		return provisioning.DataInput{}, fmt.Errorf("reading workload %s: %w", c.Spec.WorkloadRef.Name, err)
	}
	if !r.readers.of(r.Config)(def.URI) {
		// A definition that cannot read other Workloads' ports sees its own Workload only:
		// listing the namespace's Workloads on every pass cost O(N) per claim, O(N²) for N
		// claims of one namespace (57% of the provisioner's CPU at N=5,000, make bench).
		if in.SourceWorkload != nil {
			in.Workloads = []*scorev1b1.Workload{in.SourceWorkload}
		}
		return in, nil
	}
	var workloads scorev1b1.WorkloadList
	// Read only (NewData copies what it keeps): no deep copy of every Workload of the
	// namespace on every pass.
	if err := r.Client.List(ctx, &workloads, client.InNamespace(id.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return provisioning.DataInput{}, fmt.Errorf("listing workloads: %w", err)
	}
	for i := range workloads.Items {
		in.Workloads = append(in.Workloads, &workloads.Items[i])
	}
	return in, nil
}
