package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
)

// ClaimView is what the planner needs to know of an observed claim.
type ClaimView struct {
	Name string
	// Phase is the provisioner's phase; Pending when the provisioner has not yet seen the
	// current spec.
	Phase  scorev1b1.ClaimPhase
	Reason scorev1b1.Reason
	// Ready is Bound with every output available, for the current spec.
	Ready bool
	// OutputsAvailable is Ready, or Binding with every output of the current spec published
	// while its objects become healthy: enough to deploy the consumer (the config's
	// dependencies.deployWhen), not to call it ready.
	OutputsAvailable bool
	// Outputs are the non-secret outputs.
	Outputs map[string]any
	// SecretName holds the secret outputs, listed in SecretKeys.
	SecretName string
	SecretKeys []string
	// Instance is the claimed instance's identity hash.
	Instance string
}

// ViewClaim summarises an observed claim.
func ViewClaim(c *scorev1b1.ResourceClaim) ClaimView {
	return view(c, c.Status.ObservedGeneration != c.Generation)
}

// ViewReported is what the provisioner last reported of a claim, whichever generation of its
// spec it reported on: what the claim still publishes while the provisioner has not taken its
// new spec yet.
func ViewReported(c *scorev1b1.ResourceClaim) ClaimView {
	return view(c, false)
}

// view is the claim's view; a stale status (of an earlier spec) is Pending unless it failed.
func view(c *scorev1b1.ResourceClaim, stale bool) ClaimView {
	v := ClaimView{Name: c.Name, Phase: c.Status.Phase, Reason: c.Status.Reason, Instance: c.Status.Instance}
	if stale && c.Status.Phase != scorev1b1.ClaimPhaseFailed {
		v.Phase = scorev1b1.ClaimPhasePending
	}
	if v.Phase == "" {
		v.Phase = scorev1b1.ClaimPhasePending
	}
	if c.Status.Outputs != nil {
		_ = json.Unmarshal(c.Status.Outputs.Raw, &v.Outputs)
	}
	if c.Status.SecretRef != nil {
		v.SecretName = c.Status.SecretRef.Name
		v.SecretKeys = append([]string(nil), c.Status.SecretRef.Keys...)
		sort.Strings(v.SecretKeys)
	}
	// A Bound claim is ready when its outputs are available, or when it publishes none at
	// all (a route or an autoscaler has nothing to tell the Workload).
	noOutputs := c.Status.Outputs == nil && c.Status.SecretRef == nil
	v.Ready = v.Phase == scorev1b1.ClaimPhaseBound && (c.Status.OutputsAvailable || noOutputs)
	v.OutputsAvailable = v.Ready || v.Phase == scorev1b1.ClaimPhaseBinding && c.Status.OutputsAvailable
	return v
}

func (v ClaimView) isSecret(output string) bool {
	for _, k := range v.SecretKeys {
		if k == output {
			return true
		}
	}
	return false
}

// DesiredClaim is a claim the orchestrator wants, or waits to create.
type DesiredClaim struct {
	Key  string
	Name string
	Spec scorev1b1.ResourceClaimSpec
	// WaitingFor lists resources whose outputs the params need and that are not yet ready;
	// such a claim is not created yet.
	WaitingFor []string
}

// ClaimName is the deterministic, collision-free name of a Workload's claim for a resource:
// "<workload>-<key>-<hash>", where the hash covers the workload, the key and the type, so
// that ("a-b", "c") and ("a", "b-c") differ and a key whose type changes gets a new claim
// (the type of a claim is immutable).
func ClaimName(workload, key, resourceType string) string {
	sum := sha256.Sum256([]byte(workload + "\x00" + key + "\x00" + resourceType))
	return fmt.Sprintf("%s-%s-%s", workload, key, hex.EncodeToString(sum[:])[:8])
}

// ClaimsInput is what DesiredClaims looks at.
type ClaimsInput struct {
	Workload     *scorev1b1.Workload
	Provisioners []orchconfig.Provisioner
	// Classes give claims of a type without a class its default class, and a class its
	// default deprovision policy.
	Classes []orchconfig.Class
	// Observed are the Workload's claims, by key.
	Observed map[string]ClaimView
	// Policy, when set, is every claim's deprovision policy, whatever the resource, its
	// class or its provisioner says: a preview environment's (internal/planning/preview).
	Policy scorev1b1.DeprovisionPolicy
	// RuntimeClass is the selected backend's runtime ("" until one is selected, and for
	// kubernetes): each claim carries it, and only definitions that realise it there serve it.
	RuntimeClass string
}

// DesiredClaims returns one claim per resource, in dependency order (a resource whose params
// use another's outputs comes after it), with params resolved from metadata and the
// published non-secret outputs. The Workload must have passed CheckInputs.
func DesiredClaims(in ClaimsInput) ([]DesiredClaim, error) {
	w := in.Workload
	order := dependencyOrder(w)
	meta := Metadata(w)
	budget := placeholder.NewBudget(placeholder.MaxExpanded) // the params of all the claims together
	out := make([]DesiredClaim, 0, len(order))
	for _, key := range order {
		res := w.Spec.Resources[key]
		params, err := values.Object(res.Params)
		if err != nil {
			return nil, fmt.Errorf("spec.resources.%s.params: %w", key, err)
		}
		d := DesiredClaim{Key: key, Name: ClaimName(w.Name, key, res.Type)}
		resolved, waiting, err := resolveParams(params, meta, in.Observed, budget)
		if err != nil {
			return nil, fmt.Errorf("spec.resources.%s.params: %w", key, err)
		}
		d.WaitingFor = waiting
		class, id := deref(res.Class), deref(res.ID)
		served, _, found := provisionermatch.Resolve(provisionermatch.Input{Classes: in.Classes, Provisioners: in.Provisioners,
			Claim: provisionermatch.Claim{Type: res.Type, Class: class, ID: id, Params: resolved, RuntimeClass: in.RuntimeClass}})
		if found && len(waiting) == 0 {
			// What the definition says its params may be, told before anything is provisioned.
			var refused *orchconfig.ParamError
			if err := in.Provisioners[served.Index].CheckParams(served.Params); errors.As(err, &refused) {
				return nil, Problem{Field: fmt.Sprintf("spec.resources.%s.params.%s", key, refused.Param),
					Message: fmt.Sprintf("The value must be %s, not %s.", refused.Want, refused.Value)}
			}
		}
		// The policy: a preview's, else the resource's annotation, else its class's, else its
		// provisioner's, else Delete.
		policy, _ := PolicyAnnotation(res)
		if policy == "" {
			policy = scorev1b1.DeprovisionPolicy(served.DeprovisionPolicy)
		}
		if policy == "" {
			policy = scorev1b1.DeprovisionDelete
		}
		if in.Policy != "" {
			policy = in.Policy
		}
		d.Spec = scorev1b1.ResourceClaimSpec{
			WorkloadRef:       scorev1b1.LocalWorkloadRef{Name: w.Name, UID: string(w.UID)},
			Key:               key,
			Type:              res.Type,
			Class:             class,
			ID:                id,
			Metadata:          res.Metadata,
			DeprovisionPolicy: policy,
			RuntimeClass:      in.RuntimeClass,
		}
		if len(resolved) > 0 {
			raw, err := json.Marshal(resolved)
			if err != nil {
				return nil, err
			}
			d.Spec.Params = &apiextensionsv1.JSON{Raw: raw}
		}
		out = append(out, d)
	}
	return out, nil
}

// resolveParams substitutes metadata and the non-secret outputs of ready claims. Outputs of
// claims not yet ready are waited for; a secret output may not flow into params, because a
// claim's spec is not a Secret.
func resolveParams(params, meta map[string]any, observed map[string]ClaimView, budget *placeholder.Budget) (map[string]any, []string, error) {
	refs, err := placeholder.RefsInValue(params)
	if err != nil {
		return nil, nil, err
	}
	waiting := map[string]bool{}
	for _, r := range refs {
		if r.Root != placeholder.RootResources {
			continue
		}
		c, ok := observed[r.Resource()]
		switch {
		case !ok || !c.Ready:
			waiting[r.Resource()] = true
		case c.isSecret(r.Output()):
			return nil, nil, fmt.Errorf("the placeholder ${%s} names a secret output, which params may not use", r.Raw)
		}
	}
	if len(waiting) > 0 {
		return params, slices.Sorted(maps.Keys(waiting)), nil
	}
	resolved, err := placeholder.SubstituteValue(params, func(r placeholder.Ref) (any, bool) {
		if r.Root == placeholder.RootMetadata {
			return placeholder.LookupPath(meta, r.Path)
		}
		return placeholder.LookupPath(observed[r.Resource()].Outputs, r.Path[1:])
	}, budget)
	if err != nil {
		var un *placeholder.Unresolved
		if errors.As(err, &un) {
			return params, []string{un.Ref.Resource()}, nil
		}
		return nil, nil, err
	}
	m, _ := resolved.(map[string]any)
	return m, nil, nil
}

// dependencyOrder sorts resource keys so that dependencies come first, ties by name.
func dependencyOrder(w *scorev1b1.Workload) []string {
	keys := slices.Sorted(maps.Keys(w.Spec.Resources))
	placed := map[string]bool{}
	var out []string
	for len(out) < len(keys) {
		progressed := false
		for _, k := range keys {
			if placed[k] {
				continue
			}
			ready := true
			for _, d := range paramsDependencies(w, k) {
				if !placed[d] && d != k {
					ready = false
				}
			}
			if ready {
				placed[k] = true
				out = append(out, k)
				progressed = true
			}
		}
		if !progressed { // a cycle: CheckInputs reports it; keep the rest in name order
			for _, k := range keys {
				if !placed[k] {
					placed[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// PolicyAnnotation reads score.dev/deprovision-policy from a resource's metadata.
func PolicyAnnotation(res scorev1b1.Resource) (scorev1b1.DeprovisionPolicy, error) {
	meta, err := values.Object(res.Metadata)
	if err != nil {
		return "", err
	}
	anns, _ := meta["annotations"].(map[string]any)
	v, ok := anns[scorev1b1.AnnotationDeprovisionPolicy]
	if !ok {
		return "", nil
	}
	switch p := scorev1b1.DeprovisionPolicy(fmt.Sprint(v)); p {
	case scorev1b1.DeprovisionDelete, scorev1b1.DeprovisionRetain, scorev1b1.DeprovisionOrphan:
		return p, nil
	default:
		return "", fmt.Errorf("the %s annotation must be Delete, Retain or Orphan, not %q", scorev1b1.AnnotationDeprovisionPolicy, p)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
