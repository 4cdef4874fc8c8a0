// Package preview says what a preview environment is and what the platform allows it. From a
// namespace's metadata (its preview labels, its maker and expiry annotations, its creation),
// the config's previews policy and what is known of the admission policy that binds previews
// to their makers (Guard), it decides whether the namespace is a preview, whether the control
// plane may act on it, when it expires, whether the limit on previews (per maker) admits it
// and the deprovision policy of its claims. It is pure: the orchestrator, the preview
// controller, scorectl and why use it alike.
//
// Why the admission policy: whoever may create and patch namespaces (the role preview makers
// need) could otherwise write another's preview's expiry and have the control plane, with its
// own rights, delete that preview; label any namespace named preview-* and have it deleted; or
// make previews in another maker's name to fill their limit. The policy (score-preview-makers,
// config/admission/preview-makers.yaml) holds a preview's maker annotation to the name of the
// user who creates it, lets only the maker or a platform administrator change its preview
// labels and annotations afterwards, and refuses the preview label on a namespace that exists.
// The control plane acts only on previews created while it was in force (Untrusted).
package preview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Namespace is what the decision reads of a namespace: its metadata.
type Namespace struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Created     time.Time
}

// Preview is a preview namespace as the platform's policy sees it.
type Preview struct {
	// Name is the preview's name (score.dev/preview), Namespace the namespace it is.
	Name, Namespace string
	// Of is the namespace it previews (score.dev/preview-of), as its maker wrote it.
	Of string
	// Maker is the user who created it (score.dev/preview-maker): the limit counts previews
	// by it.
	Maker string
	// Expires is when the control plane deletes it.
	Expires time.Time
	// Refused says why the platform refuses it (not bound to its maker, previews disabled,
	// over the limit); "" when it is admitted.
	Refused string
	// Policy is the deprovision policy of every claim in it.
	Policy scorev1b1.DeprovisionPolicy
}

// Read reads ns as a preview: false when it is none, that is when it lacks the preview label
// or its name is not PreviewNamespacePrefix followed by the label's value (so that a label
// alone never makes the control plane delete a namespace).
func Read(ns Namespace, policy orchconfig.Previews) (Preview, bool) {
	name := ns.Labels[scorev1b1.LabelPreview]
	if name == "" || ns.Name != scorev1b1.PreviewNamespacePrefix+name || len(validation.IsDNS1123Label(ns.Name)) > 0 {
		return Preview{}, false
	}
	_, ttl, maxTTL, deprovision := policy.Limits()
	p := Preview{Name: name, Namespace: ns.Name, Of: ns.Labels[scorev1b1.LabelPreviewOf], Maker: ns.Annotations[scorev1b1.AnnotationPreviewMaker],
		Policy: scorev1b1.DeprovisionPolicy(deprovision)}
	p.Expires = ns.Created.Add(ttl)
	if at, err := time.Parse(time.RFC3339, ns.Annotations[scorev1b1.AnnotationPreviewExpires]); err == nil {
		p.Expires = at
	}
	if latest := ns.Created.Add(maxTTL); p.Expires.After(latest) {
		p.Expires = latest
	}
	return p, true
}

// Standing reads ns as a preview and decides whether the platform admits it: the control plane
// may act on it (Untrusted), previews are not disabled, and ns is among the oldest previews of
// its maker (by creation, then name) that the limit admits, of all (every preview namespace
// that is not being deleted, ns included or not; those it may not act on do not count).
func Standing(ns Namespace, all []Namespace, policy orchconfig.Previews, guard Guard) (Preview, bool) {
	p, ok := Read(ns, policy)
	if !ok {
		return p, false
	}
	if why := Untrusted(ns, guard); why != "" {
		p.Refused = why
		return p, true
	}
	if policy.Disabled {
		p.Refused = fmt.Sprintf("The platform does not allow preview environments (the config's previews.disabled): delete preview %s with scorectl preview down %s.", p.Name, p.Name)
		return p, true
	}
	maxCount, _, _, _ := policy.Limits()
	var mine []Namespace
	for _, o := range all {
		if q, ok := Read(o, policy); ok && q.Maker == p.Maker && o.Name != ns.Name && Untrusted(o, guard) == "" {
			mine = append(mine, o)
		}
	}
	mine = append(mine, ns)
	slices.SortFunc(mine, func(a, b Namespace) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	if i := slices.IndexFunc(mine, func(o Namespace) bool { return o.Name == ns.Name }); i >= maxCount {
		older := make([]string, 0, maxCount)
		for _, o := range mine[:maxCount] {
			older = append(older, o.Labels[scorev1b1.LabelPreview])
		}
		p.Refused = fmt.Sprintf("Preview %s is over the platform's limit of %d previews per maker (the config's previews.max): %s's previews %s %s older; delete one with scorectl preview down NAME.",
			p.Name, maxCount, p.Maker, strings.Join(older, ", "), isAre(len(older)))
	}
	return p, true
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// PolicyName names the admission policy that binds previews to their makers, and the policy
// its binding names (config/admission/preview-makers.yaml).
const PolicyName = "score-preview-makers"

// Settle is how long a new policy (or binding) may take to be enforced by every API server:
// each loads it through a watch of its own. A namespace created within Settle of the policy's
// coming into force may have been admitted without it.
const Settle = 10 * time.Second

// Guard is what the control plane knows of the admission policy that binds previews to their
// makers.
type Guard struct {
	// Since is when the policy came into force: the later creation of the policy and of its
	// binding. Zero when it is not in force.
	Since time.Time
	// Missing says why it is not in force, when Since is zero.
	Missing string
}

// GuardOf judges the policy named PolicyName and the bindings read (policy nil when there is
// none; the controllers read the one binding named PolicyName): in force when the policy fails
// closed (failurePolicy Fail, the default) and a binding of it denies (validationActions holds
// Deny), since the later of the two creations (of the earliest such binding).
func GuardOf(policy *admissionregistrationv1.ValidatingAdmissionPolicy, bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding) Guard {
	switch {
	case policy == nil:
		return Guard{Missing: "the ValidatingAdmissionPolicy " + PolicyName + " does not exist"}
	case policy.Spec.FailurePolicy != nil && *policy.Spec.FailurePolicy != admissionregistrationv1.Fail:
		return Guard{Missing: "the ValidatingAdmissionPolicy " + PolicyName + " ignores its own failures (failurePolicy " + string(*policy.Spec.FailurePolicy) + ", not Fail)"}
	}
	var since time.Time
	for _, b := range bindings {
		if b.Spec.PolicyName != PolicyName || !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
			continue
		}
		if at := b.CreationTimestamp.Time; since.IsZero() || at.Before(since) {
			since = at
		}
	}
	if since.IsZero() {
		return Guard{Missing: "no ValidatingAdmissionPolicyBinding of " + PolicyName + " denies (validationActions: [Deny])"}
	}
	if created := policy.CreationTimestamp.Time; created.After(since) {
		since = created
	}
	return Guard{Since: since}
}

// Untrusted says why the control plane must not act on ns as a preview — not end it, not
// count it, not admit its Workloads — or "" when it may: ns names its maker and was created at
// least Settle after the policy that binds previews to their makers came into force, so that
// its preview labels, maker and expiry were written by its maker or a platform administrator.
// A namespace made before (by an earlier version, or while the policy was missing) may carry
// anything anyone wrote.
func Untrusted(ns Namespace, guard Guard) string {
	name := ns.Labels[scorev1b1.LabelPreview]
	switch {
	case guard.Since.IsZero():
		return fmt.Sprintf("Preview %s is not bound to its maker: %s, so anyone who may label namespaces could have written it; the control plane neither admits nor ends a preview until the platform installs that policy (docs/operations.md, preview environments).",
			name, guard.Missing)
	case ns.Annotations[scorev1b1.AnnotationPreviewMaker] == "":
		return fmt.Sprintf("Preview %s names no maker (the annotation %s, which scorectl preview up sets): the control plane neither admits nor ends it; a platform administrator deletes namespace %s.",
			name, scorev1b1.AnnotationPreviewMaker, ns.Name)
	case ns.Created.Before(guard.Since.Add(Settle)):
		return fmt.Sprintf("Preview %s was created at %s, before the admission policy %s came into force (%s), so its maker and expiry may have been written by anyone: the control plane neither admits nor ends it; a platform administrator deletes namespace %s.",
			name, ns.Created.UTC().Format(time.RFC3339), PolicyName, guard.Since.UTC().Format(time.RFC3339), ns.Name)
	}
	return ""
}

// Expired reports whether the preview has expired at now.
func (p Preview) Expired(now time.Time) bool { return !now.Before(p.Expires) }

// Describe is the preview in one line, as scorectl why and the dashboard show it.
func (p Preview) Describe(now time.Time) string {
	when := "expired; the control plane is deleting it"
	if !p.Expired(now) {
		when = fmt.Sprintf("expires %s (in %s); the control plane deletes it then with its dependencies (%s)",
			p.Expires.UTC().Format(time.RFC3339), p.Expires.Sub(now).Round(time.Minute), p.Policy)
	}
	of := ""
	if p.Of != "" {
		of = " of namespace " + p.Of
	}
	if p.Maker != "" {
		of += ", made by " + p.Maker
	}
	line := fmt.Sprintf("preview %s%s, %s", p.Name, of, when)
	if p.Refused != "" {
		line += ". Refused: " + p.Refused
	}
	return line
}
