package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"html/template"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/dashboardview"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/whyobserve"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/status/why"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// can asks the API server whether the user may verb the resource (a SelfSubjectAccessReview,
// which every authenticated user may create); an error answers no.
func (s *Server) can(ctx context.Context, verb, group, resource, namespace, name string) bool {
	k := accessKey{verb, group, resource, namespace, name}
	if allowed, ok := s.rights.get(k); ok {
		return allowed
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace, Name: name}}}
	if err := s.c.Create(ctx, review); err != nil {
		return false
	}
	s.rights.put(k, review.Status.Allowed)
	return review.Status.Allowed
}

// identity is who the API server says the user is (a SelfSubjectReview), for the header.
func (s *Server) identity(ctx context.Context) string {
	review := &authenticationv1.SelfSubjectReview{}
	if err := s.c.Create(ctx, review); err != nil {
		return ""
	}
	return review.Status.UserInfo.Username
}

func (s *Server) defaultNamespace() string { return cmp.Or(s.opts.DefaultNamespace, "default") }

// reader is where resource is read from in namespace ns: the shared cache when it holds it
// there, else the API server.
func (s *Server) reader(resource, ns string) client.Reader {
	if s.shared.cached(resource, ns) {
		return s.shared.cache
	}
	return s.c
}

// inScope runs list once for every namespace of scope (once across namespaces for nil).
func inScope(scope []string, list func(ns string, opts ...client.ListOption) error) error {
	if scope == nil {
		return list("")
	}
	for _, ns := range scope {
		if err := list(ns, client.InNamespace(ns)); err != nil {
			return err
		}
	}
	return nil
}

type fleetData struct {
	Scope   string
	Notices []string
	Rows    []dashboardview.FleetRow
}

func (s *Server) fleetFragment(ctx context.Context) (template.HTML, error) {
	scope := s.shared.scope
	d := fleetData{Scope: "Every namespace."}
	if scope != nil {
		d.Scope = "Namespace " + strings.Join(scope, ", ") + "."
		if len(s.opts.Namespaces) == 0 {
			d.Notices = append(d.Notices, "Your rights do not let you list Workloads in every namespace, so this shows the namespace of your kubeconfig's context; name others with --namespace.")
		}
	}
	var workloads []scorev1b1.Workload
	err := inScope(scope, func(ns string, opts ...client.ListOption) error {
		var l scorev1b1.WorkloadList
		if err := s.reader("workloads", ns).List(ctx, &l, opts...); err != nil {
			return err
		}
		workloads = append(workloads, l.Items...)
		return nil
	})
	if apierrors.IsForbidden(err) {
		d.Notices = append(d.Notices, "Your rights do not let you list Workloads here.")
	} else if err != nil {
		return "", err
	}
	// Plans give each row its profile and backend: read from the shared cache when the user
	// may list them across the scope, else not shown (reading them per render would cost a
	// list of every plan for every change).
	var plans []scorev1b1.WorkloadPlan
	if s.shared.resources["workloadplans"] {
		if err := inScope(scope, func(ns string, opts ...client.ListOption) error {
			var l scorev1b1.WorkloadPlanList
			if err := s.shared.cache.List(ctx, &l, opts...); err != nil {
				return err
			}
			plans = append(plans, l.Items...)
			return nil
		}); err != nil {
			return "", err
		}
	} else if len(workloads) > 0 {
		d.Notices = append(d.Notices, "Your rights do not include the platform's internal objects, so the profile and backend each Workload got are not shown.")
	}
	d.Rows = dashboardview.Fleet(workloads, plans)
	return s.render("fleet", d)
}

// workloadRights is what the user may read around one Workload.
type workloadRights struct {
	claims, plan, exposure, events, config bool
}

func (s *Server) workloadRights(ctx context.Context, ns, name string) workloadRights {
	g := scorev1b1.GroupVersion.Group
	return workloadRights{
		claims:   s.can(ctx, "list", g, "resourceclaims", ns, ""),
		plan:     s.can(ctx, "get", g, "workloadplans", ns, name),
		exposure: s.can(ctx, "get", g, "workloadexposures", ns, name),
		events:   s.can(ctx, "list", "", "events", ns, ""),
		config:   s.can(ctx, "get", "", "configmaps", s.opts.ConfigNamespace, s.opts.ConfigName),
	}
}

// hidden names, for the page, what the rights do not show.
func (r workloadRights) hidden() []string {
	var out []string
	for _, h := range []struct {
		ok   bool
		what string
	}{{r.claims, "its resource claims and what was provisioned for them"}, {r.plan, "its plan and the objects applied for it"},
		{r.exposure, "its exposure"}, {r.events, "its events"}, {r.config, "the platform's decision trace (it needs the Orchestrator Config)"}} {
		if !h.ok {
			out = append(out, h.what)
		}
	}
	return out
}

type eventRow struct {
	Type, Reason, Message string
	Count                 int32
	Last                  time.Time
}

type workloadData struct {
	Namespace, Name string
	Found           bool
	Ready           string
	Health          dashboardview.Health
	Reason, Message string
	Notices         []string
	Graph           dashboardview.Graph
	Conditions      []metav1.Condition
	Events          []eventRow
	EventsHidden    bool
	Why, WhyNote    string
}

// maxEvents is how many of the latest events the page lists.
const maxEvents = 15

func (s *Server) workloadFragment(ctx context.Context, ns, name string) (template.HTML, error) {
	d, err := s.workloadData(ctx, ns, name)
	if err != nil {
		return "", err
	}
	return s.render("workload", d)
}

func (s *Server) workloadData(ctx context.Context, ns, name string) (workloadData, error) {
	d := workloadData{Namespace: ns, Name: name}
	w := &scorev1b1.Workload{}
	switch err := s.reader("workloads", ns).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return d, nil
	case err != nil:
		return d, err
	}
	d.Found, d.Health, d.Ready = true, dashboardview.WorkloadHealth(w), string(metav1.ConditionUnknown)
	if c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady); c != nil {
		d.Ready, d.Reason, d.Message = string(c.Status), termtext.Escape(c.Reason), termtext.Escape(c.Message)
	}
	d.Conditions = escapedConditions(w.Status.Conditions)
	rights := s.workloadRights(ctx, ns, name)
	if h := rights.hidden(); len(h) > 0 {
		d.Notices = append(d.Notices, "Your rights do not show "+joinAnd(h)+"; the graph shows what the Workload's own status says in their place.")
	}

	in := dashboardview.GraphInput{Workload: w, ClaimsHidden: !rights.claims, PlanHidden: !rights.plan, ExposureHidden: !rights.exposure}
	if rights.claims {
		var claims scorev1b1.ResourceClaimList
		if err := s.reader("resourceclaims", ns).List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
			return d, err
		}
		in.Claims = claims.Items
	}
	if rights.plan {
		p := &scorev1b1.WorkloadPlan{}
		if err := s.reader("workloadplans", ns).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err == nil {
			in.Plan = p
		} else if !apierrors.IsNotFound(err) {
			return d, err
		}
	}
	if rights.exposure {
		x := &scorev1b1.WorkloadExposure{}
		if err := s.reader("workloadexposures", ns).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, x); err == nil {
			in.Exposure = x
		} else if !apierrors.IsNotFound(err) {
			return d, err
		}
	}
	if err := s.copies(ctx, w, &in); err != nil {
		return d, err
	}
	d.Graph = dashboardview.BuildGraph(in)

	d.EventsHidden = !rights.events
	if rights.events {
		var events corev1.EventList
		if err := s.c.List(ctx, &events, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: workloadEvents(name)}); err != nil {
			return d, err
		}
		d.Events = latestEvents(events.Items, maxEvents)
	}

	if !rights.config {
		// The control plane answers a tenant's trace when asked (a WorkloadTrace), which is a
		// write: the dashboard writes nothing, scorectl why asks.
		d.WhyNote = "The decision trace needs read access to the Orchestrator Config (" + s.opts.ConfigNamespace + "/" + s.opts.ConfigName + "), which the dashboard reads with your rights; scorectl why " + name + " -n " + ns + " asks the control plane for it."
		return d, nil
	}
	d.Why, d.WhyNote = s.trace(ctx, w, in)
	return d, nil
}

// trace is scorectl why's text, or why there is none.
func (s *Server) trace(ctx context.Context, w *scorev1b1.Workload, in dashboardview.GraphInput) (text, note string) {
	cm := &corev1.ConfigMap{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.opts.ConfigNamespace, Name: s.opts.ConfigName}, cm); err != nil {
		return "", "The Orchestrator Config could not be read: " + err.Error()
	}
	doc := []byte(cm.Data[s.opts.ConfigKey])
	cfg, err := orchconfig.Parse(doc)
	if err != nil {
		return "", "The Orchestrator Config in the cluster is invalid (the orchestrator keeps using its last valid one): " + err.Error()
	}
	wi := why.Input{Workload: w, Config: cfg, ConfigRevision: orchconfig.Revision(doc), Region: s.opts.Region, Claims: in.Claims, Plan: in.Plan, Exposure: in.Exposure,
		ConfigSource: s.opts.ConfigNamespace + "/" + s.opts.ConfigName}
	for _, c := range in.Copies {
		if c.Plan != nil {
			wi.Copies = append(wi.Copies, *c.Plan)
		}
	}
	// The Workload's namespace (a preview?) and the objects in the way, read with the user's
	// rights from the API server (bounded; the objects only while the Workload is not Ready);
	// what the rights hide, the trace says. No Secret is
	// asked about, not even whether it exists: the dashboard makes no request for a Secret.
	wi.Observed = whyobserve.Read(ctx, s.c, wi, whyobserve.SkipSecrets("the dashboard asks nothing of Secrets; scorectl why says whether it exists"))
	var b bytes.Buffer
	if err := why.Explain(&b, wi); err != nil {
		return "", err.Error()
	}
	return b.String(), ""
}

// escapedConditions are conditions with their reasons and messages escaped for the page.
func escapedConditions(conditions []metav1.Condition) []metav1.Condition {
	out := make([]metav1.Condition, len(conditions))
	for i, c := range conditions {
		c.Reason, c.Message = termtext.Escape(c.Reason), termtext.Escape(c.Message)
		out[i] = c
	}
	return out
}

// workloadEvents selects the events about the Workload named name.
func workloadEvents(name string) fields.Selector {
	return fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.kind", "Workload"), fields.OneTermEqualSelector("involvedObject.name", name))
}

// latestEvents are the n most recent events, newest first.
func latestEvents(events []corev1.Event, n int) []eventRow {
	rows := make([]eventRow, 0, len(events))
	for _, e := range events {
		last := e.LastTimestamp.Time
		if e.Series != nil {
			last = e.Series.LastObservedTime.Time
		}
		if last.IsZero() {
			last = e.EventTime.Time
		}
		rows = append(rows, eventRow{Type: e.Type, Reason: termtext.Escape(e.Reason), Message: termtext.Escape(e.Message), Count: max(e.Count, 1), Last: last})
	}
	slices.SortStableFunc(rows, func(a, b eventRow) int { return b.Last.Compare(a.Last) })
	return rows[:min(n, len(rows))]
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
