package workloaddecision

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/placement"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
)

// The platform's config: web-service by default (a GPU backend only for Workloads that ask
// for it), placed on a member cluster of region eu under the profile placed; postgres and
// redis provisioned by templates.
const doc = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-web
        runtimeClass: kubernetes
        priority: 5
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: "` + digest + `"}
      - backendId: k8s-web-gpu
        runtimeClass: kubernetes
        priority: 1
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web-gpu.yaml", digest: "` + digest + `"}
        constraints: {features: [gpu]}
  - name: placed
    backends:
      - backendId: k8s-eu
        runtimeClass: kubernetes
        version: 1.0.0
        template: {kind: manifests, ref: "configmap://score-system/templates/web.yaml", digest: "` + digest + `"}
        placement: {clusterSelector: {matchLabels: {region: eu}}, policy: Ordered}
defaults:
  profile: web-service
provisioners:
  - uri: template://test/postgres
    type: postgres
  - uri: template://test/redis
    type: redis
`

const digest = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

const (
	revOne   = "sha256:1111"
	revTwo   = "sha256:2222"
	endpoint = "https://web.team.example.com"
)

var now = metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))

// loaded is the config at revision, with edits applied.
func loaded(t *testing.T, revision string, edits ...func(*orchconfig.Config)) *Config {
	t.Helper()
	cfg, err := orchconfig.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(cfg)
	}
	sel, err := selection.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Config{Config: cfg, Selector: sel, Revision: revision}
}

func withRollout(c *orchconfig.Config) { c.Rollout = &orchconfig.RolloutPolicy{} }

func deployWhenOutputsAvailable(c *orchconfig.Config) {
	c.Dependencies.DeployWhen = orchconfig.DeployWhenOutputsAvailable
}

// Workloads: web in team, at generation 2.

type wopt func(*scorev1b1.Workload)

func workload(opts ...wopt) *scorev1b1.Workload {
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "u1", Generation: 2},
		Spec:       scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

func withResource(key, typ string) wopt {
	return func(w *scorev1b1.Workload) {
		if w.Spec.Resources == nil {
			w.Spec.Resources = map[string]scorev1b1.Resource{}
		}
		w.Spec.Resources[key] = scorev1b1.Resource{Type: typ}
	}
}

func withParams(key, params string) wopt {
	return func(w *scorev1b1.Workload) {
		r := w.Spec.Resources[key]
		r.Params = &apiextensionsv1.JSON{Raw: []byte(params)}
		w.Spec.Resources[key] = r
	}
}

func withVar(k, v string) wopt {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Variables == nil {
			c.Variables = map[string]string{}
		}
		c.Variables[k] = v
		w.Spec.Containers["main"] = c
	}
}

func withAnnotation(k, v string) wopt {
	return func(w *scorev1b1.Workload) { metav1.SetMetaDataAnnotation(&w.ObjectMeta, k, v) }
}

func withLabel(k, v string) wopt {
	return func(w *scorev1b1.Workload) { metav1.SetMetaDataLabel(&w.ObjectMeta, k, v) }
}

func withFinalizer(w *scorev1b1.Workload) {
	w.Finalizers = append(w.Finalizers, scorev1b1.WorkloadFinalizer)
}

func beingDeleted(w *scorev1b1.Workload) {
	t := metav1.NewTime(now.Add(-time.Minute))
	w.DeletionTimestamp = &t
}

// Claims, plans and exposures, as the API server has them.

type copt func(*scorev1b1.ResourceClaim)

// claimFor is the claim a pass over o creates for key, as created, controlled by the Workload.
func claimFor(t *testing.T, o Observed, key string, opts ...copt) scorev1b1.ResourceClaim {
	t.Helper()
	o.Workload = o.Workload.DeepCopy()
	withFinalizer(o.Workload)
	for _, cw := range From(o).Claims {
		if cw.Op == CreateClaim && cw.Key == key {
			c := scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: cw.Name, Generation: 1,
				Labels: labelsOf(o.Workload), OwnerReferences: []metav1.OwnerReference{controller(o.Workload)}}, Spec: cw.Spec}
			for _, opt := range opts {
				opt(&c)
			}
			return c
		}
	}
	t.Fatalf("the pass creates no claim for %s", key)
	return scorev1b1.ResourceClaim{}
}

// ownedClaim is a claim of the Workload's for a key it does not declare (any more).
func ownedClaim(w *scorev1b1.Workload, key, typ string, policy scorev1b1.DeprovisionPolicy, opts ...copt) scorev1b1.ResourceClaim {
	c := scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: planner.ClaimName("web", key, typ), Generation: 1,
			Labels: map[string]string{scorev1b1.LabelWorkload: "web"}, OwnerReferences: []metav1.OwnerReference{controller(w)}},
		Spec: scorev1b1.ResourceClaimSpec{Key: key, Type: typ, DeprovisionPolicy: policy, WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: string(w.UID)}},
	}
	for _, opt := range opts {
		opt(&c)
	}
	return c
}

// labelsOf are the labels of the objects created for w: its name, and its shard.
func labelsOf(w *scorev1b1.Workload) map[string]string {
	l := map[string]string{scorev1b1.LabelWorkload: w.Name}
	if s, ok := w.Labels[scorev1b1.LabelShard]; ok {
		l[scorev1b1.LabelShard] = s
	}
	return l
}

func controller(w *scorev1b1.Workload) metav1.OwnerReference {
	return *metav1.NewControllerRef(w, scorev1b1.GroupVersion.WithKind("Workload"))
}

func bound(outputs string) copt {
	return func(c *scorev1b1.ResourceClaim) {
		c.Status = scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseBound, ObservedGeneration: c.Generation, OutputsAvailable: true,
			Outputs: &apiextensionsv1.JSON{Raw: []byte(outputs)}}
	}
}

func bindingWithOutputs(outputs string) copt {
	return func(c *scorev1b1.ResourceClaim) {
		bound(outputs)(c)
		c.Status.Phase = scorev1b1.ClaimPhaseBinding
	}
}

func failedWith(reason scorev1b1.Reason) copt {
	return func(c *scorev1b1.ResourceClaim) {
		c.Status = scorev1b1.ResourceClaimStatus{Phase: scorev1b1.ClaimPhaseFailed, Reason: reason, ObservedGeneration: c.Generation}
	}
}

func withSecretOutputs(keys ...string) copt {
	return func(c *scorev1b1.ResourceClaim) {
		c.Status.SecretRef = &scorev1b1.OutputsSecretRef{Name: c.Name + "-outputs", Keys: keys}
	}
}

func going(c *scorev1b1.ResourceClaim) {
	t := metav1.NewTime(now.Add(-time.Second))
	c.DeletionTimestamp = &t
}

// retainedBy is a claim no Workload controls, retained by the Workload of uid.
func retainedBy(uid string) copt {
	return func(c *scorev1b1.ResourceClaim) {
		c.OwnerReferences = nil
		c.Spec.WorkloadRef.UID = uid
	}
}

func controlledByAnother(c *scorev1b1.ResourceClaim) {
	c.OwnerReferences = []metav1.OwnerReference{controller(&scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u9"}})}
	c.Spec.WorkloadRef.UID = "u9"
}

func withClaimRevision(revision string) copt {
	return func(c *scorev1b1.ResourceClaim) { c.Spec.ConfigRevision = revision }
}

func annotated(value string) copt {
	return func(c *scorev1b1.ResourceClaim) {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, value)
	}
}

// exposureOf is the Workload's exposure with spec, publishing url for the Workload's
// generation.
func exposureOf(w *scorev1b1.Workload, spec scorev1b1.WorkloadExposureSpec, url string) *scorev1b1.WorkloadExposure {
	return &scorev1b1.WorkloadExposure{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 1, Labels: labelsOf(w), OwnerReferences: []metav1.OwnerReference{controller(w)}},
		Spec:       spec,
		Status:     scorev1b1.WorkloadExposureStatus{ObservedWorkloadGeneration: w.Generation, Exposures: []scorev1b1.Exposure{{URL: url}}},
	}
}

// planOf is the Workload's plan with spec, Projected for its generation 1.
func planOf(w *scorev1b1.Workload, spec *scorev1b1.WorkloadPlanSpec) *scorev1b1.WorkloadPlan {
	return &scorev1b1.WorkloadPlan{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 1, Labels: labelsOf(w), OwnerReferences: []metav1.OwnerReference{controller(w)}},
		Spec:       *spec,
		Status:     scorev1b1.WorkloadPlanStatus{Phase: scorev1b1.PlanPhaseProjected, ObservedGeneration: 1},
	}
}

// rollsOut makes a Projected plan's next generation roll out behind its serving objects, as
// the runtime reports it.
func rollsOut(p *scorev1b1.WorkloadPlan) {
	p.Generation++
	p.Status.Phase, p.Status.ObservedGeneration = scorev1b1.PlanPhasePlanning, p.Generation
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: scorev1b1.PlanConditionHealthy, Status: metav1.ConditionFalse,
		Reason: scorev1b1.PlanReasonUpdating, ObservedGeneration: p.Generation, Message: "Rolling out behind the previous version; waiting for Deployment web."})
}

// fresh is a pass over a Workload built from opts that has nothing yet, under the config.
func fresh(t *testing.T, opts ...wopt) Observed {
	return Observed{Workload: workload(opts...), Now: now, Config: loaded(t, revOne)}
}

// settled is a pass over a Ready Workload: web with a postgres db whose host its container
// reads, under cfg (the default config when nil); its claim Bound, its exposure publishing
// endpoint, its plan Projected, and the status a pass decided from all that. opts change the
// Workload before anything is derived from it.
func settled(t *testing.T, cfg *Config, opts ...wopt) Observed {
	t.Helper()
	if cfg == nil {
		cfg = loaded(t, revOne)
	}
	o := Observed{Workload: workload(append([]wopt{withResource("db", "postgres"), withVar("DB_HOST", "${resources.db.host}"), withFinalizer}, opts...)...),
		Now: now, Config: cfg, Clusters: []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"region": "eu"}}}}
	o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", bound(`{"host":"db.team"}`))}
	d := From(o)
	if d.Next != WriteExposure || d.Exposure.Op != CreateExposure {
		t.Fatalf("settling: %s, want the exposure created", d.Next)
	}
	o.Exposure = exposureOf(o.Workload, d.Exposure.Spec, endpoint)
	if d = From(o); d.Next != WritePlan || !d.Plan.Create {
		t.Fatalf("settling: %s, want the plan created (retry %v)", d.Next, d.Retry)
	}
	o.Plan = planOf(o.Workload, d.Plan.Spec)
	if d = From(o); d.Next != Done || d.Status == nil {
		t.Fatalf("settling: %s, want the status", d.Next)
	}
	o.Workload.Status = *d.Status
	return o
}

// API errors, as the API server answers them.

var claimsGR = schema.GroupResource{Group: "score.dev", Resource: "resourceclaims"}

func forbidden(message string) error {
	return apierrors.NewForbidden(claimsGR, "x", errors.New(message))
}

var (
	quota         = forbidden("exceeded quota: q, requested: count/resourceclaims.score.dev=1")
	policy        = forbidden(`admission webhook "v.example.com" denied the request: no`)
	conflict      = apierrors.NewConflict(claimsGR, "x", errors.New("the object has been modified"))
	webhookDown   = apierrors.NewInternalError(errors.New(`failed calling webhook "v.example.com": connection refused`))
	tooLarge      = apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	alreadyExists = apierrors.NewAlreadyExists(claimsGR, "x")
	terminating   = func() error {
		err := forbidden("unable to create new content in namespace team because it is being terminated")
		err.(*apierrors.StatusError).ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return err
	}()
)

// answers are the API server's answers to a pass's writes: every write goes through but those
// named, by the write (Next) or, for a claim, by its key.
type answers struct {
	writes map[Next]error
	claims map[string]error
}

// drive runs a pass as the controller does: decide, make the write decided (here: record what
// the API server answered, and change in place what the controller's write changes in place),
// decide again, until Done. It returns the last decision and the writes made, in order. Each
// decision must leave what it observed as it was.
func drive(t *testing.T, o Observed, a answers) (Decision, []string) {
	t.Helper()
	var writes []string
	for range 20 {
		before := snapshot(o)
		d := From(o)
		if after := snapshot(o); !equality.Semantic.DeepEqual(before, after) {
			t.Fatal("From changed what it observed")
		}
		written := &Written{Err: a.writes[d.Next]}
		switch d.Next {
		case Done:
			return d, writes
		case HandOver:
			for _, rl := range d.HandOver {
				writes = append(writes, "hand over "+describe(rl.Object))
				rl.Object.SetLabels(rl.Labels)
			}
			o.HandedOver = written
		case AddFinalizer:
			writes = append(writes, "add finalizer")
			if written.Err == nil {
				withFinalizer(o.Workload)
			}
			o.Finalizer = written
		case WriteClaims:
			if o.ClaimsWritten == nil {
				o.ClaimsWritten = map[string]error{}
			}
			for _, cw := range d.Claims {
				key := cw.Key
				if key == "" {
					key = cw.Claim.Spec.Key
				}
				writes = append(writes, fmt.Sprintf("%s claim %s%s", cw.Op, key, on(cw.Spec.Cluster)))
				o.ClaimsWritten[cw.Name] = a.claims[key]
			}
			// The exposure's write, when named with the claims', is made with them.
			if d.Exposure != nil {
				writes = append(writes, fmt.Sprintf("%s exposure", d.Exposure.Op))
				o.ExposureWritten = &Written{Err: a.writes[WriteExposure]}
			}
		case WriteExposure:
			writes = append(writes, fmt.Sprintf("%s exposure", d.Exposure.Op))
			o.ExposureWritten = written
		case WritePlan:
			what := "updating plan"
			if d.Plan.Create {
				what = "creating plan"
			}
			if len(d.Plan.Events) > 0 {
				var reasons []string
				for _, e := range d.Plan.Events {
					reasons = append(reasons, e.Reason)
				}
				what += " (" + strings.Join(reasons, ", ") + ")"
			}
			writes = append(writes, what+on(d.Plan.Spec.Cluster))
			o.PlanWritten = written
		case PassOn:
			var to []string
			for _, c := range d.PassOn.Claims {
				to = append(to, c.Spec.Key)
			}
			if d.PassOn.Plan {
				to = append(to, "plan")
			}
			writes = append(writes, "pass on to "+strings.Join(to, ", "))
			o.PassedOn = written
		case RemoveFinalizer:
			writes = append(writes, "remove finalizer")
			o.FinalizerRemoved = written
		}
	}
	t.Fatalf("no end after 20 writes: %v", writes)
	return Decision{}, nil
}

func on(cluster string) string {
	if cluster == "" {
		return ""
	}
	return " on " + cluster
}

func describe(o Object) string {
	switch o := o.(type) {
	case *scorev1b1.ResourceClaim:
		return "claim " + o.Spec.Key
	case *scorev1b1.WorkloadPlan:
		return "plan"
	default:
		return "exposure"
	}
}

// snapshot copies what a decision must not change.
func snapshot(o Observed) []any {
	out := []any{o.Workload.DeepCopy(), o.Plan.DeepCopy(), o.Exposure.DeepCopy()}
	for i := range o.Claims {
		out = append(out, o.Claims[i].DeepCopy())
	}
	return out
}

// want is what a case expects of a pass; a zero field is not checked, except those that say so.
type want struct {
	// writes are the writes made, in order (always checked).
	writes []string
	// noStatus: the pass decides no status.
	noStatus bool
	// retry is in the error the pass retries with; "" none (always checked); "denied" an
	// ErrDenied.
	retry string
	// The conditions' reasons, Ready's "status/reason", a text in Ready's message.
	inputs, claims, runtime scorev1b1.Reason
	ready, message          string
	// summaries are the claims' "key: phase/reason".
	summaries []string
	// events are "type/reason", checked when set or noEvents.
	events   []string
	noEvents bool
	endpoint string
	handled  string
}

func TestFrom(t *testing.T) {
	cases := []struct {
		name     string
		observed func(t *testing.T) Observed
		answers  answers
		want     want
	}{
		// Inputs and config.
		{name: "no config yet: nothing selected or provisioned",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"))
				o.Config = nil
				return o
			},
			want: want{inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonClaimPending, runtime: scorev1b1.ReasonRuntimeSelecting,
				ready: "False/ClaimPending", message: "Waiting for the platform configuration.", noEvents: true}},
		{name: "spec invalid by its inputs: said from the first status",
			observed: func(t *testing.T) Observed { return fresh(t, withVar("DB", "${resources.db.host}")) },
			want: want{inputs: scorev1b1.ReasonSpecInvalid, claims: scorev1b1.ReasonSpecInvalid, runtime: scorev1b1.ReasonSpecInvalid,
				message: `names resource "db", which is not declared`, events: []string{"Warning/SpecInvalid"}}},
		{name: "spec invalid by its inputs after Ready: the claims' summaries stay",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				withVar("X", "${resources.nope.host}")(o.Workload)
				return o
			},
			want: want{inputs: scorev1b1.ReasonSpecInvalid, summaries: []string{"db: Bound/Succeeded"}, events: []string{"Warning/SpecInvalid"}}},
		{name: "spec invalid by selection: a profile the platform does not offer",
			observed: func(t *testing.T) Observed {
				return fresh(t, withResource("db", "postgres"), withAnnotation(scorev1b1.AnnotationProfile, "gpu-only"))
			},
			want: want{inputs: scorev1b1.ReasonSpecInvalid, message: `The requested profile "gpu-only" is not offered`}},
		{name: "no backend fits: the claims go on, the runtime says why",
			observed: func(t *testing.T) Observed {
				return fresh(t, withResource("db", "postgres"), withAnnotation(scorev1b1.AnnotationRequirements, "tpu"))
			},
			want: want{writes: []string{"add finalizer", "creating claim db"},
				inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonClaimPending, runtime: scorev1b1.ReasonRuntimeSelecting}},
		{name: "the revision to render from cannot be read: retried, no status",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"))
				o.RenderErr = errors.New("revision sha256:2222 does not load")
				return o
			},
			want: want{noStatus: true, retry: "does not load"}},

		// Preview environments.
		{name: "a preview the platform refuses: nothing is provisioned, the Workload says why",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"))
				o.Preview = &preview.Preview{Name: "pr-7", Refused: "Preview pr-7 is over the platform's limit of 1 previews of namespace team (the config's previews.max)."}
				return o
			},
			want: want{inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonPolicyViolation, runtime: scorev1b1.ReasonPolicyViolation,
				ready: "False/PolicyViolation", message: "over the platform's limit of 1 previews", events: []string{"Warning/PolicyViolation"}}},
		{name: "a preview the platform refuses after Ready: what runs stays, the summaries too",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Preview = &preview.Preview{Name: "pr-7", Refused: "The platform does not allow preview environments."}
				return o
			},
			want: want{claims: scorev1b1.ReasonPolicyViolation, summaries: []string{"db: Bound/Succeeded"}, events: []string{"Warning/PolicyViolation"}}},

		// Claims.
		{name: "the first pass: the finalizer, the claims in dependency order (one waits for another's outputs), the exposure",
			observed: func(t *testing.T) Observed {
				return fresh(t, withResource("db", "postgres"), withResource("cache", "redis"), withParams("cache", `{"db":"${resources.db.host}"}`))
			},
			want: want{writes: []string{"add finalizer", "creating claim db", "creating exposure"},
				inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonClaimPending, runtime: scorev1b1.ReasonClaimPending,
				summaries: []string{"cache: Pending/ClaimPending", "db: Pending/ClaimPending"}, noEvents: true}},
		{name: "no dependencies: no finalizer, the exposure and the plan at once",
			observed: func(t *testing.T) Observed { return fresh(t) },
			want: want{writes: []string{"creating exposure", "creating plan"},
				claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonRuntimeProvisioning, ready: "False/RuntimeProvisioning", noEvents: true}},
		{name: "the finalizer not added: retried, no status",
			observed: func(t *testing.T) Observed { return fresh(t, withResource("db", "postgres")) },
			answers:  answers{writes: map[Next]error{AddFinalizer: conflict}},
			want:     want{writes: []string{"add finalizer"}, noStatus: true, retry: "adding the finalizer"}},
		{name: "a claim created by an earlier pass that the cache does not show is not created again",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withFinalizer)
				o.Created = map[Ref]bool{{KindClaim, planner.ClaimName("web", "db", "postgres")}: true}
				return o
			},
			want: want{writes: []string{"creating exposure"}, claims: scorev1b1.ReasonClaimPending}},
		{name: "a claim refused by a quota: reported, the other claims still written, retried with backoff",
			observed: func(t *testing.T) Observed {
				return fresh(t, withResource("db", "postgres"), withResource("cache", "redis"), withFinalizer)
			},
			answers: answers{claims: map[string]error{"cache": quota}},
			want: want{writes: []string{"creating claim cache", "creating claim db", "creating exposure"}, retry: "denied",
				claims: scorev1b1.ReasonQuotaExceeded, runtime: scorev1b1.ReasonClaimPending, ready: "False/QuotaExceeded",
				summaries: []string{"cache: Failed/QuotaExceeded", "db: Pending/ClaimPending"}, events: []string{"Warning/QuotaExceeded"}}},
		{name: "a claim that exists though the cache did not show it: the pass goes on",
			observed: func(t *testing.T) Observed { return fresh(t, withResource("db", "postgres"), withFinalizer) },
			answers:  answers{claims: map[string]error{"db": alreadyExists}},
			want:     want{writes: []string{"creating claim db", "creating exposure"}, claims: scorev1b1.ReasonClaimPending}},
		{name: "a claim not created for another reason: retried, no status",
			observed: func(t *testing.T) Observed { return fresh(t, withResource("db", "postgres"), withFinalizer) },
			answers:  answers{claims: map[string]error{"db": webhookDown}},
			want:     want{writes: []string{"creating claim db", "creating exposure"}, noStatus: true, retry: "creating claim"}},
		{name: "a claim refused for its size: SpecInvalid, not retried",
			observed: func(t *testing.T) Observed { return fresh(t, withResource("db", "postgres"), withFinalizer) },
			answers:  answers{claims: map[string]error{"db": tooLarge}},
			want: want{writes: []string{"creating claim db", "creating exposure"}, inputs: scorev1b1.ReasonSpecInvalid,
				message: workloadstatus.TooLarge().Message, events: []string{"Warning/SpecInvalid"}}},
		{name: "a claim refused because the namespace is being deleted: said, no event, not retried",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				withResource("cache", "redis")(o.Workload)
				return o
			},
			answers: answers{claims: map[string]error{"cache": terminating}},
			want: want{writes: []string{"creating claim cache"}, inputs: scorev1b1.ReasonSucceeded, claims: scorev1b1.ReasonClaimPending,
				runtime: scorev1b1.ReasonClaimPending, message: "The namespace is being deleted", summaries: []string{"db: Bound/Succeeded"}, noEvents: true}},
		{name: "a claim pending",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db")}
				return o
			},
			want: want{writes: []string{"creating exposure"}, claims: scorev1b1.ReasonClaimPending, runtime: scorev1b1.ReasonClaimPending,
				message: "Waiting for 1 of 1 dependencies: db.", summaries: []string{"db: Pending/ClaimPending"}}},
		{name: "a claim failed",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", failedWith(scorev1b1.ReasonClaimFailed))}
				return o
			},
			want: want{writes: []string{"creating exposure"}, claims: scorev1b1.ReasonClaimFailed, runtime: scorev1b1.ReasonClaimPending,
				ready: "False/ClaimFailed", summaries: []string{"db: Failed/ClaimFailed"}, events: []string{"Warning/ClaimFailed"}}},
		{name: "a claim whose spec changed is updated",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Claims[0].Spec.Class = "small"
				return o
			},
			want: want{writes: []string{"updating claim db"}, ready: "True/Succeeded", noEvents: true}},
		{name: "a claim update refused by a policy: reported, retried with backoff",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Claims[0].Spec.Class = "small"
				return o
			},
			answers: answers{claims: map[string]error{"db": policy}},
			want: want{writes: []string{"updating claim db"}, retry: "denied", claims: scorev1b1.ReasonPolicyViolation,
				summaries: []string{"db: Failed/PolicyViolation"}, events: []string{"Warning/PolicyViolation"}}},
		{name: "a claim retained when its key was removed, declared again: adopted",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", retainedBy("u1"))}
				return o
			},
			want: want{writes: []string{"adopting claim db", "creating exposure"}, claims: scorev1b1.ReasonClaimPending}},
		{name: "a claim retained by an earlier Workload of the name: released for the new one",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", retainedBy("u0"))}
				return o
			},
			want: want{writes: []string{"releasing claim db", "creating exposure"}, claims: scorev1b1.ReasonClaimPending}},
		{name: "a claim being released is waited for, not recreated",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", going)}
				return o
			},
			want: want{writes: []string{"creating exposure"}, claims: scorev1b1.ReasonClaimPending}},
		{name: "another Workload's claim of the name: ClaimFailed, retried with backoff",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", controlledByAnother)}
				return o
			},
			want: want{retry: "denied", claims: scorev1b1.ReasonClaimFailed, summaries: []string{"db: Failed/ClaimFailed"}}},
		{name: "keys no longer declared: Delete deletes, Retain keeps, Orphan leaves",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Claims = append(o.Claims, ownedClaim(o.Workload, "cache", "redis", scorev1b1.DeprovisionDelete),
					ownedClaim(o.Workload, "queue", "redis", scorev1b1.DeprovisionRetain), ownedClaim(o.Workload, "logs", "redis", scorev1b1.DeprovisionOrphan))
				return o
			},
			want: want{writes: []string{"deleting claim cache", "retaining claim queue"}, ready: "True/Succeeded", summaries: []string{"db: Bound/Succeeded"}}},
		{name: "a secret output in another claim's params: SpecInvalid",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withResource("cache", "redis"), withParams("cache", `{"pw":"${resources.db.password}"}`), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", bound(`{"host":"db.team"}`), withSecretOutputs("password"))}
				return o
			},
			want: want{inputs: scorev1b1.ReasonSpecInvalid, message: "secret output"}},

		// Deploying: outputs, the exposure, the plan.
		{name: "outputs available while the claim becomes healthy: the default policy waits for it",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withVar("DB_HOST", "${resources.db.host}"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", bindingWithOutputs(`{"host":"db.team"}`))}
				return o
			},
			want: want{writes: []string{"creating exposure"}, claims: scorev1b1.ReasonClaimPending, runtime: scorev1b1.ReasonClaimPending, ready: "False/ClaimPending",
				summaries: []string{"db: Binding/ClaimPending"}}},
		// A dependency that was ready provisioned again (its definition changed).
		{name: "a ready dependency being updated, its outputs still published, keeps the Workload Ready and says so",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				bindingWithOutputs(`{"host":"db.team"}`)(&o.Claims[0])
				return o
			},
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", message: "a dependency is being updated",
				summaries: []string{"db: Binding/Succeeded"}, noEvents: true}},
		{name: "a dependency being updated stays ready through later passes, until it is Bound",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				bindingWithOutputs(`{"host":"db.team"}`)(&o.Claims[0])
				o.Workload.Status = *From(o).Status
				return o
			},
			want: want{claims: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", message: "a dependency is being updated", summaries: []string{"db: Binding/Succeeded"}, noEvents: true}},
		{name: "a ready dependency updated whose outputs are withdrawn is pending again",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				bindingWithOutputs(`{"host":"db.team"}`)(&o.Claims[0])
				o.Claims[0].Status.OutputsAvailable = false
				return o
			},
			want: want{claims: scorev1b1.ReasonClaimPending, ready: "False/ClaimPending", summaries: []string{"db: Binding/ClaimPending"}, events: []string{"Normal/ClaimPending"}}},
		{name: "a ready dependency updated to new outputs: the plan follows them, and the Workload stays Ready on what serves",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				bindingWithOutputs(`{"host":"db2.team"}`)(&o.Claims[0])
				return o
			},
			want: want{writes: []string{"updating plan"}, claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", noEvents: true}},
		{name: "a change not the Workload's own rolls out behind what serves: Ready, and says so",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				rollsOut(o.Plan)
				return o
			},
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", message: "an update is rolling out", noEvents: true}},
		{name: "another change not the Workload's own while one rolls out: still Ready",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				rollsOut(o.Plan)
				o.Plan.Generation++ // written again; the runtime has not reported on it yet
				return o
			},
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", noEvents: true}},
		{name: "the Workload's own change rolls out behind what serves: being deployed",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Workload.Generation++
				d := From(o)
				if d.Next != WriteExposure {
					t.Fatalf("%s, want the exposure's generation written", d.Next)
				}
				o.Exposure.Spec = d.Exposure.Spec
				if d = From(o); d.Next != WritePlan {
					t.Fatalf("%s, want the plan written", d.Next)
				}
				o.Plan.Spec = *d.Plan.Spec
				rollsOut(o.Plan)
				return o
			},
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonRuntimeProvisioning, ready: "False/RuntimeProvisioning"}},
		{name: "a change not the Workload's own, and nothing serves while it rolls out: being deployed",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				rollsOut(o.Plan)
				meta.FindStatusCondition(o.Plan.Status.Conditions, scorev1b1.PlanConditionHealthy).Reason = scorev1b1.PlanReasonInProgress
				return o
			},
			want: want{claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonRuntimeProvisioning, ready: "False/RuntimeProvisioning", events: []string{"Normal/RuntimeProvisioning"}}},
		{name: "outputs available and deployWhen OutputsAvailable: the plan goes ahead",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withVar("DB_HOST", "${resources.db.host}"), withFinalizer)
				o.Config = loaded(t, revOne, deployWhenOutputsAvailable)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", bindingWithOutputs(`{"host":"db.team"}`))}
				return o
			},
			want: want{writes: []string{"creating exposure", "creating plan"}, claims: scorev1b1.ReasonClaimPending, runtime: scorev1b1.ReasonRuntimeProvisioning}},
		{name: "an output not published: ProjectionError, no plan",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withVar("DB_PORT", "${resources.db.port}"), withFinalizer)
				o.Claims = []scorev1b1.ResourceClaim{claimFor(t, o, "db", bound(`{"host":"db.team"}`))}
				return o
			},
			want: want{writes: []string{"creating exposure"}, claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonProjectionError,
				events: []string{"Warning/ProjectionError"}}},
		{name: "the exposure created by an earlier pass that the cache does not show is not created again",
			observed: func(t *testing.T) Observed {
				o := fresh(t)
				o.Created = map[Ref]bool{{KindExposure, "web"}: true}
				return o
			},
			want: want{writes: []string{"creating plan"}, runtime: scorev1b1.ReasonRuntimeProvisioning}},
		{name: "an earlier Workload's exposure of the name is replaced; the pass goes on",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Exposure.Spec.WorkloadRef.UID = "u0"
				return o
			},
			want: want{writes: []string{"replacing exposure"}, ready: "True/Succeeded", endpoint: endpoint}},
		{name: "the exposure refused by a quota: reported, retried with backoff",
			observed: func(t *testing.T) Observed { return fresh(t) },
			answers:  answers{writes: map[Next]error{WriteExposure: quota}},
			want:     want{writes: []string{"creating exposure"}, retry: "denied", runtime: scorev1b1.ReasonQuotaExceeded}},
		{name: "the exposure not written for another reason: retried, no status",
			observed: func(t *testing.T) Observed { return fresh(t) },
			answers:  answers{writes: map[Next]error{WriteExposure: webhookDown}},
			want:     want{writes: []string{"creating exposure"}, noStatus: true, retry: "creating the exposure"}},
		{name: "a changed Workload: the exposure's generation and the plan are written",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				withVar("MODE", "fast")(o.Workload)
				o.Workload.Generation = 3
				return o
			},
			want: want{writes: []string{"updating exposure", "updating plan"}, runtime: scorev1b1.ReasonRuntimeProvisioning,
				ready: "False/RuntimeProvisioning", events: []string{"Normal/RuntimeProvisioning"}}},
		{name: "the plan refused by a policy: reported, retried with backoff",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil, withVar("MODE", "fast"))
				o.Plan.Spec.Values = nil
				return o
			},
			answers: answers{writes: map[Next]error{WritePlan: policy}},
			want: want{writes: []string{"updating plan"}, retry: "denied", runtime: scorev1b1.ReasonPolicyViolation,
				events: []string{"Warning/PolicyViolation"}}},
		{name: "the plan refused for its size: SpecInvalid, not retried, no reconcile request passed on",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withAnnotation(scorev1b1.AnnotationReconcileRequestedAt, "r1"))
				return o
			},
			answers: answers{writes: map[Next]error{WritePlan: tooLarge}},
			want: want{writes: []string{"creating exposure", "creating plan"}, inputs: scorev1b1.ReasonSpecInvalid,
				message: workloadstatus.TooLarge().Message}},
		{name: "the plan exists but the cache does not show it: retried, no status",
			observed: func(t *testing.T) Observed { return fresh(t) },
			answers:  answers{writes: map[Next]error{WritePlan: alreadyExists}},
			want:     want{writes: []string{"creating exposure", "creating plan"}, noStatus: true, retry: "not visible"}},
		{name: "the plan created by an earlier pass that the cache does not show is not created again",
			observed: func(t *testing.T) Observed {
				o := fresh(t)
				o.Created = map[Ref]bool{{KindPlan, "web"}: true}
				return o
			},
			want: want{writes: []string{"creating exposure"}, runtime: scorev1b1.ReasonRuntimeProvisioning}},

		// Revisions.
		{name: "a config change that renders the same plan writes nothing",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Config = loaded(t, revTwo)
				return o
			},
			want: want{ready: "True/Succeeded"}},
		{name: "under a rollout, a wave not reached keeps its plan",
			observed: func(t *testing.T) Observed {
				o := settled(t, loaded(t, revOne, withRollout))
				o.Config = loaded(t, revTwo, withRollout)
				o.Kept = map[string]Kept{revOne: {Config: loaded(t, revOne, withRollout).Config}}
				return o
			},
			want: want{ready: "True/Succeeded"}},
		{name: "under a rollout, a wave reached records the revision on the plan: claims the revisions provision alike keep theirs",
			observed: func(t *testing.T) Observed {
				o := settled(t, loaded(t, revOne, withRollout))
				o.Config, o.Reached = loaded(t, revTwo, withRollout), true
				o.Kept = map[string]Kept{revOne: {Config: loaded(t, revOne, withRollout).Config}}
				return o
			},
			// What the runtime deploys is the same: its last report stands.
			want: want{writes: []string{"updating plan"}, runtime: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", noEvents: true}},
		{name: "under a rollout, a claim the new revision provisions differently takes it",
			observed: func(t *testing.T) Observed {
				o := settled(t, loaded(t, revOne, withRollout))
				o.Config = loaded(t, revTwo, withRollout, func(c *orchconfig.Config) { c.Provisioners[0].URI = "template://test/postgres-v2" })
				o.Kept = map[string]Kept{revOne: {Config: loaded(t, revOne, withRollout).Config}}
				return o
			},
			// Being updated, its outputs the previous revision's until the provisioner takes
			// the new one: Ready, nothing planned with them.
			want: want{writes: []string{"updating claim db"}, claims: scorev1b1.ReasonSucceeded, runtime: scorev1b1.ReasonSucceeded,
				ready: "True/Succeeded", message: "a dependency is being updated", summaries: []string{"db: Binding/Succeeded"}, noEvents: true}},
		{name: "under a rollout, a claim whose revision is no longer kept takes the Workload's",
			observed: func(t *testing.T) Observed {
				o := settled(t, loaded(t, revOne, withRollout))
				o.Config = loaded(t, revTwo, withRollout)
				return o
			},
			want: want{writes: []string{"updating claim db"}, claims: scorev1b1.ReasonSucceeded, ready: "True/Succeeded", message: "a dependency is being updated"}},
		{name: "under a rollout, a kept revision that cannot be read: retried, no status",
			observed: func(t *testing.T) Observed {
				o := settled(t, loaded(t, revOne, withRollout))
				o.Config = loaded(t, revTwo, withRollout)
				o.Kept = map[string]Kept{revOne: {Err: webhookDown}}
				return o
			},
			want: want{noStatus: true, retry: "Internal error"}},

		// The runtime and the mirror.
		{name: "the plan's new generation not observed yet: provisioning",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Plan.Generation = 2
				// The Workload's status last said it was being deployed.
				o.Workload.Status.Conditions = workloadstatus.Apply(o.Workload.Status.Conditions, workloadstatus.Conditions{InputsValid: workloadstatus.InputsValid(),
					ClaimsReady:  workloadstatus.Condition{Status: metav1.ConditionTrue, Reason: scorev1b1.ReasonSucceeded, Message: "All dependencies are ready."},
					RuntimeReady: workloadstatus.Provisioning()}, o.Workload.Generation, now)
				return o
			},
			want: want{runtime: scorev1b1.ReasonRuntimeProvisioning, ready: "False/RuntimeProvisioning", noEvents: true}},
		{name: "the plan failed on another Workload's object",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				failPlan(o.Plan, scorev1b1.ReasonPermissionDenied, scorev1b1.PlanReasonObjectConflict)
				return o
			},
			want: want{runtime: scorev1b1.ReasonPermissionDenied, message: "Another workload owns an object"}},
		{name: "the plan's cluster does not answer",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				failPlan(o.Plan, scorev1b1.ReasonNetworkUnavailable, scorev1b1.PlanReasonClusterUnreachable)
				return o
			},
			want: want{runtime: scorev1b1.ReasonNetworkUnavailable, message: "does not answer"}},
		{name: "the plan failed by a quota",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				failPlan(o.Plan, scorev1b1.ReasonQuotaExceeded, string(scorev1b1.ReasonQuotaExceeded))
				return o
			},
			want: want{runtime: scorev1b1.ReasonQuotaExceeded, events: []string{"Warning/QuotaExceeded"}}},
		{name: "the runtime says the Workload is degraded: Ready, and says so",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Exposure.Status.Conditions = []metav1.Condition{{Type: scorev1b1.ExposureConditionDegraded, Status: metav1.ConditionTrue, Reason: "Replicas"}}
				return o
			},
			want: want{runtime: scorev1b1.ReasonRuntimeDegraded, ready: "True/RuntimeDegraded", events: []string{"Normal/RuntimeDegraded"}}},
		{name: "the endpoint follows the exposure",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Exposure.Status.Exposures[0].URL = "https://web.team.example.com/v2"
				return o
			},
			want: want{ready: "True/Succeeded", endpoint: "https://web.team.example.com/v2", noEvents: true}},
		{name: "an invalid exposure URL is rejected: the endpoint stays",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				o.Exposure.Status.Exposures[0].URL = "http://localhost:8080/"
				return o
			},
			want: want{ready: "True/Succeeded", endpoint: endpoint}},
		{name: "becoming Ready is an event",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				ok := workloadstatus.InputsValid()
				o.Workload.Status.Conditions = workloadstatus.Apply(nil, workloadstatus.Conditions{InputsValid: ok, ClaimsReady: ok, RuntimeReady: workloadstatus.Provisioning()}, 2, now)
				return o
			},
			want: want{ready: "True/Succeeded", events: []string{"Normal/Succeeded"}}},

		// Placement.
		{name: "placed on the cluster that matches: its claims there first",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withAnnotation(scorev1b1.AnnotationProfile, "placed"))
				o.Clusters = []placement.Cluster{{Name: "us-1", Labels: map[string]string{"region": "us"}}, {Name: "eu-1", Labels: map[string]string{"region": "eu"}}}
				return o
			},
			want: want{writes: []string{"add finalizer", "creating claim db on eu-1", "creating exposure"}, claims: scorev1b1.ReasonClaimPending}},
		{name: "no cluster matches: NoCluster, no claim created",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withAnnotation(scorev1b1.AnnotationProfile, "placed"))
				o.Clusters = []placement.Cluster{{Name: "us-1", Labels: map[string]string{"region": "us"}}}
				return o
			},
			want: want{runtime: scorev1b1.ReasonRuntimeSelecting, message: "No runtime location"}},
		{name: "moved: the cluster no longer fits; its claim moves first, and waits for the new instance",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil, withAnnotation(scorev1b1.AnnotationProfile, "placed"))
				o.Clusters = []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"region": "us"}}, {Name: "eu-2", Labels: map[string]string{"region": "eu"}}}
				return o
			},
			want: want{writes: []string{"updating claim db on eu-2"}, claims: scorev1b1.ReasonClaimPending, runtime: scorev1b1.ReasonClaimPending,
				summaries: []string{"db: Pending/ClaimPending"}}},
		{name: "moved without claims: the plan moves, and says so",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withAnnotation(scorev1b1.AnnotationProfile, "placed"))
				o.Clusters = []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"region": "eu"}}}
				d := From(o)
				o.Exposure = exposureOf(o.Workload, d.Exposure.Spec, endpoint)
				o.Plan = planOf(o.Workload, From(o).Plan.Spec)
				o.Clusters = []placement.Cluster{{Name: "eu-2", Labels: map[string]string{"region": "eu"}}}
				return o
			},
			want: want{writes: []string{"updating plan (Placed) on eu-2"}, runtime: scorev1b1.ReasonRuntimeProvisioning}},
		{name: "moved from the hub: a Workload selecting a backend with placement is placed, and says so",
			observed: func(t *testing.T) Observed {
				o := fresh(t)
				d := From(o)
				o.Exposure = exposureOf(o.Workload, d.Exposure.Spec, endpoint)
				o.Plan = planOf(o.Workload, From(o).Plan.Spec)
				withAnnotation(scorev1b1.AnnotationProfile, "placed")(o.Workload)
				o.Clusters = []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"region": "eu"}}}
				return o
			},
			want: want{writes: []string{"updating plan (Placed) on eu-1"}, runtime: scorev1b1.ReasonRuntimeProvisioning}},
		{name: "moved to the hub: a Workload selecting a backend without placement comes home, and says so",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withAnnotation(scorev1b1.AnnotationProfile, "placed"))
				o.Clusters = []placement.Cluster{{Name: "eu-1", Labels: map[string]string{"region": "eu"}}}
				d := From(o)
				o.Exposure = exposureOf(o.Workload, d.Exposure.Spec, endpoint)
				o.Plan = planOf(o.Workload, From(o).Plan.Spec)
				delete(o.Workload.Annotations, scorev1b1.AnnotationProfile)
				return o
			},
			want: want{writes: []string{"updating plan (Placed)"}, runtime: scorev1b1.ReasonRuntimeProvisioning}},
		{name: "the clusters cannot be read: retried, no status",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withResource("db", "postgres"), withAnnotation(scorev1b1.AnnotationProfile, "placed"))
				o.ClustersErr = errors.New("reading the clusters: timeout")
				return o
			},
			want: want{noStatus: true, retry: "reading the clusters"}},

		// Shards and reconcile requests.
		{name: "a Workload given to another shard hands its objects over, the exposure first",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				withLabel(scorev1b1.LabelShard, "b")(o.Workload)
				return o
			},
			want: want{writes: []string{"hand over exposure", "hand over claim db", "hand over plan"}, ready: "True/Succeeded"}},
		{name: "a hand-over refused: retried, no status",
			observed: func(t *testing.T) Observed {
				o := settled(t, nil)
				withLabel(scorev1b1.LabelShard, "b")(o.Workload)
				return o
			},
			answers: answers{writes: map[Next]error{HandOver: conflict}},
			want:    want{writes: []string{"hand over exposure", "hand over claim db", "hand over plan"}, noStatus: true, retry: "modified"}},
		{name: "a reconcile request is passed on to the claims and the plan, and handled",
			observed: func(t *testing.T) Observed { return requested(settled(t, nil)) },
			want:     want{writes: []string{"pass on to db, plan"}, handled: "r1", ready: "True/Succeeded"}},
		{name: "a reconcile request already passed on: handled, nothing written",
			observed: func(t *testing.T) Observed {
				o := requested(settled(t, nil))
				annotated("r1")(&o.Claims[0])
				metav1.SetMetaDataAnnotation(&o.Plan.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, "r1")
				return o
			},
			want: want{handled: "r1"}},
		{name: "a reconcile request not passed on: the status is written, the request not handled",
			observed: func(t *testing.T) Observed { return requested(settled(t, nil)) },
			answers:  answers{writes: map[Next]error{PassOn: conflict}},
			want:     want{writes: []string{"pass on to db, plan"}, retry: "passing on the reconcile request", ready: "True/Succeeded"}},
		{name: "a plan the pass created is passed the reconcile request",
			observed: func(t *testing.T) Observed {
				return fresh(t, withAnnotation(scorev1b1.AnnotationReconcileRequestedAt, "r1"))
			},
			want: want{writes: []string{"creating exposure", "creating plan", "pass on to plan"}, handled: "r1"}},
		{name: "a pass retried passes no reconcile request on",
			observed: func(t *testing.T) Observed {
				return fresh(t, withResource("db", "postgres"), withFinalizer, withAnnotation(scorev1b1.AnnotationReconcileRequestedAt, "r1"))
			},
			answers: answers{claims: map[string]error{"db": quota}},
			want:    want{writes: []string{"creating claim db", "creating exposure"}, retry: "denied", claims: scorev1b1.ReasonQuotaExceeded}},

		// Deletion.
		{name: "deleted without the finalizer: nothing to do",
			observed: func(t *testing.T) Observed { return fresh(t, beingDeleted) },
			want:     want{noStatus: true}},
		{name: "deleted: Delete claims deleted and waited for, Retain kept, Orphan left",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withFinalizer, beingDeleted)
				o.Claims = []scorev1b1.ResourceClaim{ownedClaim(o.Workload, "cache", "redis", ""),
					ownedClaim(o.Workload, "queue", "redis", scorev1b1.DeprovisionRetain), ownedClaim(o.Workload, "logs", "redis", scorev1b1.DeprovisionOrphan)}
				return o
			},
			want: want{writes: []string{"deleting claim cache", "retaining claim queue"}, claims: scorev1b1.ReasonClaimPending,
				runtime: scorev1b1.ReasonClaimPending, message: "waiting for dependencies to be released: cache."}},
		{name: "deleted: a claim already going is waited for without a write",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withFinalizer, beingDeleted)
				o.Claims = []scorev1b1.ResourceClaim{ownedClaim(o.Workload, "cache", "redis", scorev1b1.DeprovisionDelete, going)}
				return o
			},
			want: want{claims: scorev1b1.ReasonClaimPending, message: "released: cache."}},
		{name: "deleted: a release refused: retried, no status",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withFinalizer, beingDeleted)
				o.Claims = []scorev1b1.ResourceClaim{ownedClaim(o.Workload, "cache", "redis", "")}
				return o
			},
			answers: answers{claims: map[string]error{"cache": conflict}},
			want:    want{writes: []string{"deleting claim cache"}, noStatus: true, retry: "deleting claim"}},
		{name: "deleted: nothing left to wait for, the finalizer goes",
			observed: func(t *testing.T) Observed {
				o := fresh(t, withFinalizer, beingDeleted)
				o.Claims = []scorev1b1.ResourceClaim{ownedClaim(o.Workload, "logs", "redis", scorev1b1.DeprovisionOrphan)}
				return o
			},
			want: want{writes: []string{"remove finalizer"}, noStatus: true}},
		{name: "deleted: the finalizer not removed: retried",
			observed: func(t *testing.T) Observed { return fresh(t, withFinalizer, beingDeleted) },
			answers:  answers{writes: map[Next]error{RemoveFinalizer: conflict}},
			want:     want{writes: []string{"remove finalizer"}, noStatus: true, retry: "removing the finalizer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.observed(t)
			d, writes := drive(t, o, tc.answers)
			check(t, d, writes, tc.want)
		})
	}
}

// TestPreviewClaimsPolicy: in a preview, every claim has the preview's policy, whatever the
// resource's annotation says; elsewhere the annotation holds.
func TestPreviewClaimsPolicy(t *testing.T) {
	retained := func(w *scorev1b1.Workload) {
		r := w.Spec.Resources["db"]
		r.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"annotations":{"` + scorev1b1.AnnotationDeprovisionPolicy + `":"Retain"}}`)}
		w.Spec.Resources["db"] = r
	}
	for _, tc := range []struct {
		name    string
		preview *preview.Preview
		want    scorev1b1.DeprovisionPolicy
	}{
		{name: "not a preview: the annotation", want: scorev1b1.DeprovisionRetain},
		{name: "a preview: Delete", preview: &preview.Preview{Name: "pr-7", Policy: scorev1b1.DeprovisionDelete}, want: scorev1b1.DeprovisionDelete},
		{name: "a preview the platform keeps: its policy", preview: &preview.Preview{Name: "pr-7", Policy: scorev1b1.DeprovisionOrphan}, want: scorev1b1.DeprovisionOrphan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fresh(t, withResource("db", "postgres"), retained, withFinalizer)
			o.Preview = tc.preview
			d := From(o)
			if d.Next != WriteClaims || len(d.Claims) != 1 {
				t.Fatalf("decided %s, want the claim written", d.Next)
			}
			if got := d.Claims[0].Spec.DeprovisionPolicy; got != tc.want {
				t.Errorf("policy %s, want %s", got, tc.want)
			}
		})
	}
}

func failPlan(p *scorev1b1.WorkloadPlan, reason scorev1b1.Reason, applied string) {
	p.Status.Phase, p.Status.Reason = scorev1b1.PlanPhaseFailed, reason
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: scorev1b1.PlanConditionApplied, Status: metav1.ConditionFalse, Reason: applied})
}

func check(t *testing.T, d Decision, writes []string, w want) {
	t.Helper()
	if !slices.Equal(writes, w.writes) {
		t.Errorf("writes %q, want %q", writes, w.writes)
	}
	switch {
	case w.retry == "" && d.Retry != nil:
		t.Errorf("retried with %v, want no retry", d.Retry)
	case w.retry == "denied" && !errors.Is(d.Retry, ErrDenied):
		t.Errorf("retry %v, want a denial", d.Retry)
	case w.retry != "" && w.retry != "denied" && (d.Retry == nil || !strings.Contains(d.Retry.Error(), w.retry)):
		t.Errorf("retry %v, want one saying %q", d.Retry, w.retry)
	}
	if w.noStatus {
		if d.Status != nil {
			t.Errorf("a status was decided: %+v", d.Status.Conditions)
		}
		return
	}
	if d.Status == nil {
		t.Fatal("no status decided")
	}
	st := d.Status
	for typ, reason := range map[string]scorev1b1.Reason{scorev1b1.ConditionInputsValid: w.inputs, scorev1b1.ConditionClaimsReady: w.claims, scorev1b1.ConditionRuntimeReady: w.runtime} {
		if c := meta.FindStatusCondition(st.Conditions, typ); reason != "" && (c == nil || c.Reason != string(reason)) {
			t.Errorf("%s: %+v, want reason %s", typ, c, reason)
		}
	}
	ready := meta.FindStatusCondition(st.Conditions, scorev1b1.ConditionReady)
	if ready == nil {
		t.Fatal("no Ready condition")
	}
	if got := fmt.Sprintf("%s/%s", ready.Status, ready.Reason); w.ready != "" && got != w.ready {
		t.Errorf("Ready %s (%s), want %s", got, ready.Message, w.ready)
	}
	if w.message != "" && !strings.Contains(ready.Message, w.message) {
		t.Errorf("Ready's message %q, want %q in it", ready.Message, w.message)
	}
	if noun := workloadstatus.RuntimeNoun(ready.Message); noun != "" {
		t.Errorf("Ready's message names %s: %q", noun, ready.Message)
	}
	if w.summaries != nil {
		var got []string
		for _, s := range st.Claims {
			got = append(got, fmt.Sprintf("%s: %s/%s", s.Key, s.Phase, s.Reason))
		}
		if !slices.Equal(got, w.summaries) {
			t.Errorf("claims %q, want %q", got, w.summaries)
		}
	}
	if w.events != nil || w.noEvents {
		var got []string
		for _, e := range d.Events {
			got = append(got, e.Type+"/"+e.Reason)
		}
		if !slices.Equal(got, w.events) {
			t.Errorf("events %q, want %q", got, w.events)
		}
	}
	if w.endpoint != "" && (st.Endpoint == nil || *st.Endpoint != w.endpoint) {
		t.Errorf("endpoint %v, want %s", st.Endpoint, w.endpoint)
	}
	if st.LastHandledReconcileAt != w.handled {
		t.Errorf("lastHandledReconcileAt %q, want %q", st.LastHandledReconcileAt, w.handled)
	}
	if st.ObservedGeneration == 0 {
		t.Error("observedGeneration not set")
	}
}

// A Workload at rest decides the status it has: the pass writes nothing, neither an object nor
// its status, and records no event (the zero writes at rest the end-to-end tests measure).
func TestFromAtRestWritesNothing(t *testing.T) {
	for name, o := range map[string]Observed{
		"ready":                   settled(t, nil),
		"ready under a rollout":   settled(t, loaded(t, revOne, withRollout)),
		"ready on a member":       settled(t, nil, withAnnotation(scorev1b1.AnnotationProfile, "placed")),
		"ready in a shard":        settled(t, nil, withLabel(scorev1b1.LabelShard, "a")),
		"request already handled": settledHandled(t),
	} {
		t.Run(name, func(t *testing.T) {
			want := o.Workload.Status.DeepCopy()
			d, writes := drive(t, o, answers{})
			if len(writes) > 0 || d.Retry != nil || len(d.Events) > 0 || len(d.Transitions) > 0 {
				t.Fatalf("writes %q, retry %v, events %v, transitions %v", writes, d.Retry, d.Events, d.Transitions)
			}
			if d.Status == nil || !equality.Semantic.DeepEqual(*d.Status, *want) {
				t.Fatalf("the status decided differs from the one read:\n%+v\n%+v", d.Status, want)
			}
		})
	}
}

// requested is o with the reconcile request r1 on its Workload.
func requested(o Observed) Observed {
	withAnnotation(scorev1b1.AnnotationReconcileRequestedAt, "r1")(o.Workload)
	return o
}

// settledHandled is a settled Workload whose reconcile request was passed on and handled.
func settledHandled(t *testing.T) Observed {
	o := requested(settled(t, nil))
	annotated("r1")(&o.Claims[0])
	metav1.SetMetaDataAnnotation(&o.Plan.ObjectMeta, scorev1b1.AnnotationReconcileRequestedAt, "r1")
	o.Workload.Status.LastHandledReconcileAt = "r1"
	return o
}

// A claim write that stops the writer with a refusal leaves the writes after it to the next
// decision, which asks for them alone: no write is made twice.
func TestClaimWritesAfterARefusal(t *testing.T) {
	o := fresh(t, withResource("a", "redis"), withResource("b", "redis"), withResource("c", "redis"), withFinalizer)
	d := From(o)
	if d.Next != WriteClaims || len(d.Claims) != 3 {
		t.Fatalf("%s %d claims, want the three created", d.Next, len(d.Claims))
	}
	o.ClaimsWritten = map[string]error{d.Claims[0].Name: nil, d.Claims[1].Name: quota}
	d = From(o)
	if d.Next != WriteClaims || len(d.Claims) != 1 || d.Claims[0].Key != "c" {
		t.Fatalf("after a refusal of b: %s %+v, want c alone", d.Next, d.Claims)
	}
}

// The first pass one request shallower: the claims and the exposure do not depend on
// each other, so the decision names them together; the finalizer still comes first, alone,
// and nothing is named twice.
func TestExposureWrittenWithTheClaims(t *testing.T) {
	o := fresh(t, withResource("db", "postgres"), withResource("cache", "redis"))
	if d := From(o); d.Next != AddFinalizer || d.Exposure != nil || len(d.Claims) > 0 {
		t.Fatalf("%s, exposure %v, claims %d: want the finalizer alone, before any child", d.Next, d.Exposure, len(d.Claims))
	}
	withFinalizer(o.Workload)
	d := From(o)
	if d.Next != WriteClaims || len(d.Claims) != 2 || d.Exposure == nil || d.Exposure.Op != CreateExposure {
		t.Fatalf("%s, %d claims, exposure %+v: want both claims and the exposure together", d.Next, len(d.Claims), d.Exposure)
	}

	// A claim write left to the next decision does not name the exposure again.
	o.ClaimsWritten = map[string]error{d.Claims[0].Name: nil}
	o.ExposureWritten = &Written{}
	if d := From(o); d.Next != WriteClaims || len(d.Claims) != 1 || d.Exposure != nil {
		t.Fatalf("%s, %d claims, exposure %+v: want the other claim alone", d.Next, len(d.Claims), d.Exposure)
	}

	// An exposure an earlier pass created, which the cache does not show, is not created again.
	o = fresh(t, withResource("db", "postgres"), withFinalizer)
	o.Created = map[Ref]bool{{KindExposure, "web"}: true}
	if d := From(o); d.Next != WriteClaims || d.Exposure != nil {
		t.Fatalf("%s, exposure %+v: want the claim alone", d.Next, d.Exposure)
	}

	// Written together, judged after: the exposure refused by a quota is reported as before.
	o = fresh(t, withResource("db", "postgres"), withFinalizer)
	d, writes := drive(t, o, answers{writes: map[Next]error{WriteExposure: quota}})
	if want := []string{"creating claim db", "creating exposure"}; !slices.Equal(writes, want) {
		t.Fatalf("writes %v, want %v", writes, want)
	}
	if d.Status == nil || !errors.Is(d.Retry, ErrDenied) {
		t.Fatalf("status %v, retry %v: want the refusal reported and retried", d.Status, d.Retry)
	}
}
