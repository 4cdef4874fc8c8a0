// Package preview says what a preview environment is and what the platform allows it. From a
// namespace's metadata (its preview labels, its expiry annotation, its creation) and the
// config's previews policy it decides whether the namespace is a preview, when it expires,
// whether the limit on previews admits it and the deprovision policy of its claims. It is
// pure: the orchestrator, the preview controller, scorectl and why use it alike.
package preview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
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
	// Of is the namespace it previews (score.dev/preview-of); Group what the limit counts
	// previews by: Of, or the value of the config's team label.
	Of, Group string
	// Expires is when the control plane deletes it.
	Expires time.Time
	// Refused says why the platform refuses it (previews disabled, over the limit); "" when
	// it is admitted.
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
	p := Preview{Name: name, Namespace: ns.Name, Of: ns.Labels[scorev1b1.LabelPreviewOf], Policy: scorev1b1.DeprovisionPolicy(deprovision)}
	p.Group = p.Of
	if policy.TeamLabel != "" {
		p.Group = ns.Labels[policy.TeamLabel]
	}
	p.Expires = ns.Created.Add(ttl)
	if at, err := time.Parse(time.RFC3339, ns.Annotations[scorev1b1.AnnotationPreviewExpires]); err == nil {
		p.Expires = at
	}
	if latest := ns.Created.Add(maxTTL); p.Expires.After(latest) {
		p.Expires = latest
	}
	return p, true
}

// Standing reads ns as a preview and decides whether the platform admits it: previews are
// not disabled, and ns is among the oldest previews of its group (by creation, then name) that
// the limit admits, of all (every preview namespace that is not being deleted, ns included or
// not).
func Standing(ns Namespace, all []Namespace, policy orchconfig.Previews) (Preview, bool) {
	p, ok := Read(ns, policy)
	if !ok {
		return p, false
	}
	if policy.Disabled {
		p.Refused = fmt.Sprintf("The platform does not allow preview environments (the config's previews.disabled): delete preview %s with scorectl preview down %s.", p.Name, p.Name)
		return p, true
	}
	maxCount, _, _, _ := policy.Limits()
	var group []Namespace
	for _, o := range all {
		if q, ok := Read(o, policy); ok && q.Group == p.Group && o.Name != ns.Name {
			group = append(group, o)
		}
	}
	group = append(group, ns)
	slices.SortFunc(group, func(a, b Namespace) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	if i := slices.IndexFunc(group, func(o Namespace) bool { return o.Name == ns.Name }); i >= maxCount {
		older := make([]string, 0, maxCount)
		for _, o := range group[:maxCount] {
			older = append(older, o.Labels[scorev1b1.LabelPreview])
		}
		p.Refused = fmt.Sprintf("Preview %s is over the platform's limit of %d %s (the config's previews.max): %s %s older; delete one with scorectl preview down NAME.",
			p.Name, maxCount, p.counted(policy), strings.Join(older, ", "), isAre(len(older)))
	}
	return p, true
}

// counted names what the limit counts previews of.
func (p Preview) counted(policy orchconfig.Previews) string {
	if policy.TeamLabel != "" {
		return fmt.Sprintf("previews per team (%s=%s)", policy.TeamLabel, p.Group)
	}
	return "previews of namespace " + p.Of
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
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
	line := fmt.Sprintf("preview %s%s, %s", p.Name, of, when)
	if p.Refused != "" {
		line += ". Refused: " + p.Refused
	}
	return line
}
