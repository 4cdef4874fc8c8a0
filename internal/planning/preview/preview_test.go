package preview

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// inForce is the policy that binds previews to their makers, in force a day before t0.
var inForce = Guard{Since: t0.Add(-24 * time.Hour)}

// ns is a namespace made by alice unless more names another maker (a "maker" key, "" for none).
func ns(name, preview, of string, created time.Time, more ...string) Namespace {
	n := Namespace{Name: name, Created: created, Labels: map[string]string{}, Annotations: map[string]string{scorev1b1.AnnotationPreviewMaker: "alice"}}
	if preview != "" {
		n.Labels[scorev1b1.LabelPreview] = preview
	}
	if of != "" {
		n.Labels[scorev1b1.LabelPreviewOf] = of
	}
	for i := 0; i+1 < len(more); i += 2 {
		switch {
		case more[i] == "maker" && more[i+1] == "":
			delete(n.Annotations, scorev1b1.AnnotationPreviewMaker)
		case more[i] == "maker":
			n.Annotations[scorev1b1.AnnotationPreviewMaker] = more[i+1]
		case strings.Contains(more[i], "expires"):
			n.Annotations[more[i]] = more[i+1]
		default:
			n.Labels[more[i]] = more[i+1]
		}
	}
	return n
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ns      Namespace
		policy  orchconfig.Previews
		want    bool
		expires time.Time
		of      string
		deprov  scorev1b1.DeprovisionPolicy
	}{
		{name: "not labelled", ns: ns("preview-a", "", "", t0)},
		{name: "a label alone does not make any namespace a preview", ns: ns("production", "a", "team-a", t0)},
		{name: "the name must be the prefix and the label", ns: ns("preview-b", "a", "team-a", t0)},
		{name: "default lifetime and Delete", ns: ns("preview-a", "a", "team-a", t0), want: true, expires: t0.Add(24 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "the expiry it names", ns: ns("preview-a", "a", "team-a", t0, scorev1b1.AnnotationPreviewExpires, t0.Add(2*time.Hour).Format(time.RFC3339)),
			want: true, expires: t0.Add(2 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "an expiry past maxTTL is cut to it", ns: ns("preview-a", "a", "team-a", t0, scorev1b1.AnnotationPreviewExpires, t0.Add(9999*time.Hour).Format(time.RFC3339)),
			want: true, expires: t0.Add(7 * 24 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "an expiry that does not parse is the default", ns: ns("preview-a", "a", "team-a", t0, scorev1b1.AnnotationPreviewExpires, "tomorrow"),
			want: true, expires: t0.Add(24 * time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionDelete},
		{name: "the platform's lifetime and policy", ns: ns("preview-a", "a", "team-a", t0),
			policy: orchconfig.Previews{DefaultTTL: "2h", MaxTTL: "1h", DeprovisionPolicy: "Retain"},
			want:   true, expires: t0.Add(time.Hour), of: "team-a", deprov: scorev1b1.DeprovisionRetain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Read(tc.ns, tc.policy)
			if ok != tc.want {
				t.Fatalf("Read = %v, want %v", ok, tc.want)
			}
			if !ok {
				return
			}
			if !p.Expires.Equal(tc.expires) || p.Of != tc.of || p.Policy != tc.deprov {
				t.Errorf("got expires %s of %q policy %s, want %s %q %s", p.Expires, p.Of, p.Policy, tc.expires, tc.of, tc.deprov)
			}
		})
	}
}

func TestStanding(t *testing.T) {
	a := ns("preview-a", "a", "team-a", t0)
	b := ns("preview-b", "b", "team-a", t0.Add(time.Minute))
	c := ns("preview-c", "c", "team-a", t0.Add(2*time.Minute))
	// Same creation second: the name orders them.
	c2 := ns("preview-c2", "c2", "team-a", t0.Add(2*time.Minute))
	bobs := ns("preview-x", "x", "team-a", t0.Add(-time.Hour), "maker", "bob")
	// mallory's previews "of team-a", older than alice's: they count against mallory alone.
	m1 := ns("preview-m1", "m1", "team-a", t0.Add(-2*time.Hour), "maker", "mallory")
	m2 := ns("preview-m2", "m2", "team-a", t0.Add(-2*time.Hour), "maker", "mallory")
	// Made before the policy came into force, in alice's name: it does not count.
	forged := ns("preview-f", "f", "team-a", inForce.Since.Add(-time.Hour))
	all := []Namespace{a, b, c, c2, bobs, m1, m2, forged}
	for _, tc := range []struct {
		name    string
		ns      Namespace
		all     []Namespace
		policy  orchconfig.Previews
		guard   Guard
		refused string
	}{
		{name: "within the default limit", ns: c, all: all},
		{name: "the oldest are admitted", ns: b, all: all, policy: orchconfig.Previews{Max: 2}},
		{name: "a newer one is refused", ns: c, all: all, policy: orchconfig.Previews{Max: 2},
			refused: "Preview c is over the platform's limit of 2 previews per maker (the config's previews.max): alice's previews a, b are older"},
		{name: "by name within a second", ns: c2, all: all, policy: orchconfig.Previews{Max: 3}, refused: "limit of 3"},
		{name: "by name within a second, the first", ns: c, all: all, policy: orchconfig.Previews{Max: 3}},
		{name: "another maker's previews do not count, whatever they preview", ns: a, all: all, policy: orchconfig.Previews{Max: 1}},
		{name: "a maker's own are counted", ns: m2, all: all, policy: orchconfig.Previews{Max: 1}, refused: "mallory's previews m1 is older"},
		{name: "itself absent from the list", ns: b, all: []Namespace{a}, policy: orchconfig.Previews{Max: 1}, refused: "a is older"},
		{name: "disabled", ns: a, all: all, policy: orchconfig.Previews{Disabled: true}, refused: "does not allow preview environments"},
		{name: "one made before the policy is refused", ns: forged, all: all, refused: "before the admission policy score-preview-makers came into force"},
		{name: "without the policy every preview is refused", ns: a, all: all, guard: Guard{Missing: "the ValidatingAdmissionPolicy score-preview-makers does not exist"},
			refused: "Preview a is not bound to its maker: the ValidatingAdmissionPolicy score-preview-makers does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guard := tc.guard
			if guard == (Guard{}) {
				guard = inForce
			}
			p, ok := Standing(tc.ns, tc.all, tc.policy, guard)
			if !ok {
				t.Fatal("not a preview")
			}
			if tc.refused == "" && p.Refused != "" || tc.refused != "" && !strings.Contains(p.Refused, tc.refused) {
				t.Errorf("Refused = %q, want %q", p.Refused, tc.refused)
			}
		})
	}
}

// TestUntrusted: the control plane acts only on a preview that names its maker and was created
// once the policy binding previews to their makers was in force (and had settled).
func TestUntrusted(t *testing.T) {
	since := t0
	for _, tc := range []struct {
		name  string
		ns    Namespace
		guard Guard
		want  string
	}{
		{name: "made under the policy", ns: ns("preview-a", "a", "team-a", since.Add(time.Hour)), guard: Guard{Since: since}},
		{name: "no policy", ns: ns("preview-a", "a", "team-a", since.Add(time.Hour)), guard: Guard{Missing: "the ValidatingAdmissionPolicy score-preview-makers does not exist"},
			want: "Preview a is not bound to its maker: the ValidatingAdmissionPolicy score-preview-makers does not exist"},
		{name: "no maker", ns: ns("preview-a", "a", "team-a", since.Add(time.Hour), "maker", ""), guard: Guard{Since: since},
			want: "Preview a names no maker (the annotation score.dev/preview-maker"},
		{name: "made before the policy", ns: ns("preview-a", "a", "team-a", since.Add(-time.Hour)), guard: Guard{Since: since},
			want: "Preview a was created at 2026-11-27T09:00:00Z, before the admission policy score-preview-makers came into force (2026-11-27T10:00:00Z)"},
		{name: "made while the policy settled", ns: ns("preview-a", "a", "team-a", since.Add(Settle-time.Second)), guard: Guard{Since: since}, want: "before the admission policy"},
		{name: "made once it settled", ns: ns("preview-a", "a", "team-a", since.Add(Settle)), guard: Guard{Since: since}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Untrusted(tc.ns, tc.guard)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("Untrusted = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGuardOf(t *testing.T) {
	at := func(d time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: PolicyName, CreationTimestamp: metav1.NewTime(t0.Add(d))}
	}
	policy := func(d time.Duration, failure *admissionregistrationv1.FailurePolicyType) *admissionregistrationv1.ValidatingAdmissionPolicy {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: at(d), Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: failure}}
	}
	binding := func(d time.Duration, name string, actions ...admissionregistrationv1.ValidationAction) admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: at(d), Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: actions}}
	}
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	deny, warn := admissionregistrationv1.Deny, admissionregistrationv1.Warn
	for _, tc := range []struct {
		name     string
		policy   *admissionregistrationv1.ValidatingAdmissionPolicy
		bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
		since    time.Time
		missing  string
	}{
		{name: "policy and binding: since the later", policy: policy(0, &fail), bindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(time.Minute, PolicyName, deny)}, since: t0.Add(time.Minute)},
		{name: "the default failure policy is Fail", policy: policy(time.Hour, nil), bindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(0, PolicyName, deny, warn)}, since: t0.Add(time.Hour)},
		{name: "the earliest binding that denies", policy: policy(0, nil), bindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			binding(2*time.Minute, PolicyName, deny), binding(time.Minute, PolicyName, deny), binding(0, PolicyName, warn), binding(0, "other", deny)}, since: t0.Add(time.Minute)},
		{name: "no policy", bindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(0, PolicyName, deny)}, missing: "does not exist"},
		{name: "a policy that ignores failures", policy: policy(0, &ignore), bindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(0, PolicyName, deny)}, missing: "failurePolicy Ignore"},
		{name: "a binding that only warns", policy: policy(0, nil), bindings: []admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding(0, PolicyName, warn)}, missing: "no ValidatingAdmissionPolicyBinding"},
		{name: "no binding", policy: policy(0, nil), missing: "no ValidatingAdmissionPolicyBinding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := GuardOf(tc.policy, tc.bindings)
			if !g.Since.Equal(tc.since) || tc.missing == "" && g.Missing != "" || !strings.Contains(g.Missing, tc.missing) {
				t.Errorf("GuardOf = %+v, want since %s, missing %q", g, tc.since, tc.missing)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	p, _ := Read(ns("preview-a", "a", "team-a", t0), orchconfig.Previews{})
	if got := p.Describe(t0.Add(time.Hour)); !strings.Contains(got, "preview a of namespace team-a, made by alice, expires 2026-11-28T10:00:00Z (in 23h0m0s)") || !strings.Contains(got, "(Delete)") {
		t.Errorf("Describe = %q", got)
	}
	if got := p.Describe(t0.Add(25 * time.Hour)); !strings.Contains(got, "expired; the control plane is deleting it") {
		t.Errorf("Describe = %q", got)
	}
}
