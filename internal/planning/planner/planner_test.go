package planner

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// Builders.

type opt func(*scorev1b1.Workload)

func workload(opts ...opt) *scorev1b1.Workload {
	w := &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Generation: 3},
		Spec:       scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

func withContainer(name string, c scorev1b1.Container) opt {
	return func(w *scorev1b1.Workload) { w.Spec.Containers[name] = c }
}

func withVar(k, v string) opt {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Variables == nil {
			c.Variables = map[string]string{}
		}
		c.Variables[k] = v
		w.Spec.Containers["main"] = c
	}
}

func withFile(target string, f scorev1b1.ContainerFile) opt {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Files == nil {
			c.Files = map[string]scorev1b1.ContainerFile{}
		}
		c.Files[target] = f
		w.Spec.Containers["main"] = c
	}
}

func withVolume(target, source string) opt {
	return func(w *scorev1b1.Workload) {
		c := w.Spec.Containers["main"]
		if c.Volumes == nil {
			c.Volumes = map[string]scorev1b1.ContainerVolume{}
		}
		c.Volumes[target] = scorev1b1.ContainerVolume{Source: source}
		w.Spec.Containers["main"] = c
	}
}

func withResource(key, typ string, params string, annotations ...string) opt {
	return func(w *scorev1b1.Workload) {
		if w.Spec.Resources == nil {
			w.Spec.Resources = map[string]scorev1b1.Resource{}
		}
		r := scorev1b1.Resource{Type: typ}
		if params != "" {
			r.Params = &apiextensionsv1.JSON{Raw: []byte(params)}
		}
		if len(annotations) == 2 {
			r.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"annotations":{"` + annotations[0] + `":"` + annotations[1] + `"}}`)}
		}
		w.Spec.Resources[key] = r
	}
}

func ready(name string, outputs map[string]any, secretKeys ...string) ClaimView {
	v := ClaimView{Name: name, Phase: scorev1b1.ClaimPhaseBound, Ready: true, Outputs: outputs}
	if len(secretKeys) > 0 {
		v.SecretName, v.SecretKeys = name+"-outputs", secretKeys
	}
	return v
}

func TestCheckInputs(t *testing.T) {
	cases := []struct {
		name      string
		w         *scorev1b1.Workload
		wantField string
		wantMsg   string
	}{
		{"valid", workload(withVar("A", "${metadata.name}"), withResource("db", "postgres", ""), withVar("B", "${resources.db.host}")), "", ""},
		{"undeclared resource in a variable", workload(withVar("DB", "${resources.db.host}")), "spec.containers.main.variables.DB", `names resource "db", which is not declared`},
		{"malformed placeholder", workload(withVar("X", "${resources}")), "spec.containers.main.variables.X", "is malformed"},
		{"unsupported root", workload(withVar("X", "${env.HOME}")), "spec.containers.main.variables.X", "unsupported first part"},
		{"unknown metadata", workload(withVar("X", "${metadata.team}")), "spec.containers.main.variables.X", "names metadata the workload does not have"},
		{"whole resource in a variable", workload(withResource("db", "postgres", ""), withVar("X", "${resources.db}")), "spec.containers.main.variables.X", "must name an output"},
		{"undeclared resource in args", workload(withContainer("main", scorev1b1.Container{Image: "x", Args: []string{"--db=${resources.db.host}"}})), "spec.containers.main.args[0]", "not declared"},
		{"undeclared resource in a file", workload(withFile("/etc/x", scorev1b1.ContainerFile{Content: ptr.To("${resources.cache.host}")})), "spec.containers.main.files./etc/x.content", "not declared"},
		{"noExpand content is not checked", workload(withFile("/etc/x", scorev1b1.ContainerFile{Content: ptr.To("${resources.cache.host}"), NoExpand: ptr.To(true)})), "", ""},
		{"file source left in", workload(withFile("/etc/x", scorev1b1.ContainerFile{Source: ptr.To("x.conf")})), "spec.containers.main.files./etc/x", "must be inlined"},
		{"volume source mixing text", workload(withResource("data", "volume", ""), withVolume("/data", "vol-${resources.data}")), "spec.containers.main.volumes./data.source", "single ${resources.<name>} reference"},
		{"volume source undeclared", workload(withVolume("/data", "${resources.data}")), "spec.containers.main.volumes./data.source", "not declared"},
		{"whole resource in a volume is fine", workload(withResource("data", "volume", ""), withVolume("/data", "${resources.data}")), "", ""},
		{"image . without a build resource", workload(withContainer("main", scorev1b1.Container{Image: "."})), "spec.containers.main.image", "needs a resource of type image, build, buildpack"},
		{"image . with a build resource", workload(withContainer("main", scorev1b1.Container{Image: "."}), withResource("img", "build", "")), "", ""},
		{"before cycle", workload(
			withContainer("a", scorev1b1.Container{Image: "x", Before: map[string]scorev1b1.ContainerBefore{"b": {Ready: "started"}}}),
			withContainer("b", scorev1b1.Container{Image: "x", Before: map[string]scorev1b1.ContainerBefore{"a": {Ready: "started"}}})),
			"spec.containers", "cycle: a → b → a"},
		{"params undeclared", workload(withResource("route", "route", `{"host":"${resources.dns.host}"}`)), "spec.resources.route.params", "not declared"},
		{"params cycle", workload(withResource("a", "t1", `{"x":"${resources.b.y}"}`), withResource("b", "t2", `{"x":"${resources.a.y}"}`)), "spec.resources", "cycle: a → b → a"},
		{"bad policy annotation", workload(withResource("db", "postgres", "", "score.dev/deprovision-policy", "Keep")), "spec.resources.db.metadata.annotations", "must be Delete, Retain or Orphan"},
		{"escaped placeholders are literals", workload(withVar("X", "$${resources.nothing.here}")), "", ""},
		// A marker in a param echoed into an output would read any Secret of the namespace.
		{"a secret reference in a param", workload(withResource("api", "endpoint", `{"path":"/x🔐💬pg-1234_password💬🔐"}`)), "spec.resources.api.params.path", "characters of a secret reference"},
		{"a secret reference deep in a param", workload(withResource("api", "endpoint", `{"a":[{"b":"💬"}]}`)), "spec.resources.api.params.a[0].b", "which a workload may not write"},
		{"a secret reference in a param's key", workload(withResource("api", "endpoint", `{"🔐":"x"}`)), "spec.resources.api.params.🔐", "characters of a secret reference"},
		{"a secret reference in resource metadata", workload(withResource("db", "postgres", "", "note", "🔐💬x_y💬🔐")), "spec.resources.db.metadata.annotations.note", "characters of a secret reference"},
		{"a secret reference in an annotation", workload(func(w *scorev1b1.Workload) { w.Annotations = map[string]string{"team": "🔐💬x_y💬🔐"} }), "metadata.annotations.team", "characters of a secret reference"},
		{"other emoji are fine", workload(withResource("api", "endpoint", `{"path":"/🚀"}`), func(w *scorev1b1.Workload) { w.Annotations = map[string]string{"team": "🦊"} }), "", ""},
		{"a variable may hold them: it reaches no definition", workload(withVar("X", "🔐💬")), "", ""},
		// kubectl apply (client-side) copies the whole Workload, variables and files, into an
		// annotation; checking it would refuse every Workload whose variables hold them.
		{"kubectl's record of a client-side apply may hold them: it reaches no definition", workload(withVar("X", "🔐💬pg_password💬🔐"), appliedByKubectl), "", ""},
		{"the other annotations of a client-side apply are still checked", workload(withVar("X", "🔐💬"), appliedByKubectl, func(w *scorev1b1.Workload) { w.Annotations["team"] = "💬" }), "metadata.annotations.team", "characters of a secret reference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems := CheckInputs(tc.w, Allowed{})
			if tc.wantField == "" {
				if len(problems) > 0 {
					t.Fatalf("want none, got %v", problems)
				}
				return
			}
			for _, p := range problems {
				if p.Field == tc.wantField && strings.Contains(p.Message, tc.wantMsg) {
					return
				}
			}
			t.Fatalf("want %s: %q, got %v", tc.wantField, tc.wantMsg, problems)
		})
	}
}

func TestClaimName(t *testing.T) {
	if ClaimName("a-b", "c", "postgres") == ClaimName("a", "b-c", "postgres") {
		t.Fatal("names collide")
	}
	if ClaimName("web", "db", "postgres") != ClaimName("web", "db", "postgres") {
		t.Fatal("not deterministic")
	}
	if ClaimName("web", "db", "postgres") == ClaimName("web", "db", "mysql") {
		t.Fatal("a new type needs a new claim")
	}
	if n := ClaimName(strings.Repeat("w", 63), strings.Repeat("k", 63), strings.Repeat("t", 63)); len(n) > 253 {
		t.Fatalf("too long: %d", len(n))
	}
}

func TestDesiredClaims(t *testing.T) {
	provs := []orchconfig.Provisioner{
		{URI: "template://pg", Type: "postgres", DeprovisionPolicy: "Retain"},
		{URI: "template://dns", Type: "dns"},
	}
	w := workload(
		withResource("route", "route", `{"host":"${resources.dns.host}","port":80,"app":"${metadata.name}"}`),
		withResource("dns", "dns", ""),
		withResource("db", "postgres", ""),
		withResource("cache", "redis", "", "score.dev/deprovision-policy", "Orphan"),
	)

	t.Run("dependencies first and the dependent waits", func(t *testing.T) {
		got, err := DesiredClaims(ClaimsInput{Workload: w, Provisioners: provs})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, d := range got {
			keys = append(keys, d.Key)
		}
		if strings.Join(keys, ",") != "cache,db,dns,route" {
			t.Fatalf("order %v", keys)
		}
		route := got[3]
		if !reflect.DeepEqual(route.WaitingFor, []string{"dns"}) {
			t.Fatalf("route waits for %v", route.WaitingFor)
		}
		policies := map[string]scorev1b1.DeprovisionPolicy{}
		for _, d := range got {
			policies[d.Key] = d.Spec.DeprovisionPolicy
		}
		want := map[string]scorev1b1.DeprovisionPolicy{"cache": "Orphan", "db": "Retain", "dns": "Delete", "route": "Delete"}
		if !reflect.DeepEqual(policies, want) {
			t.Fatalf("policies %v", policies)
		}
		if got[1].Name != ClaimName("web", "db", "postgres") || got[1].Spec.WorkloadRef.UID != "uid-1" || got[1].Spec.Type != "postgres" {
			t.Fatalf("db claim %+v", got[1])
		}
	})

	t.Run("params resolve once the dependency is ready", func(t *testing.T) {
		got, err := DesiredClaims(ClaimsInput{Workload: w, Provisioners: provs, Observed: map[string]ClaimView{
			"dns": ready("web-dns", map[string]any{"host": "app.example.com"}),
		}})
		if err != nil {
			t.Fatal(err)
		}
		route := got[3]
		if len(route.WaitingFor) != 0 || string(route.Spec.Params.Raw) != `{"app":"web","host":"app.example.com","port":80}` {
			t.Fatalf("route %+v %s", route.WaitingFor, route.Spec.Params.Raw)
		}
	})

	t.Run("a secret output may not flow into params", func(t *testing.T) {
		_, err := DesiredClaims(ClaimsInput{Workload: workload(withResource("db", "postgres", ""), withResource("app", "thing", `{"pw":"${resources.db.password}"}`)),
			Observed: map[string]ClaimView{"db": ready("web-db", map[string]any{"host": "h"}, "password")}})
		if err == nil || !strings.Contains(err.Error(), "secret output") {
			t.Fatalf("want a refusal, got %v", err)
		}
	})
}

func planFor(t *testing.T, w *scorev1b1.Workload, claims map[string]ClaimView) PlanResult {
	t.Helper()
	res, err := BuildPlan(PlanInput{
		Workload: w, Profile: "web-service", Claims: claims,
		Backend: orchconfig.Backend{BackendID: "k8s-web", RuntimeClass: "kubernetes", Version: "1.0.0",
			Template: orchconfig.Template{Kind: "manifests", Ref: "configmap://score-system/t/web.yaml", Digest: "sha256:" + strings.Repeat("a", 64),
				Values: map[string]any{"replicas": 2, "workload": map[string]any{"name": "overridden"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestBuildPlan(t *testing.T) {
	w := workload(
		withResource("db", "postgres", ""),
		withVar("DB_URL", "postgres://${resources.db.user}:${resources.db.password}@${resources.db.host}/${metadata.name}"),
		withVar("DB_PASSWORD", "${resources.db.password}"),
		withVar("DB_HOST", "${resources.db.host}"),
		withVar("PLAIN", "hello $${not-a-placeholder}"),
		withFile("/etc/app.conf", scorev1b1.ContainerFile{Content: ptr.To("host=${resources.db.host}\npw=${resources.db.password}\n"), Mode: ptr.To("0600")}),
		withFile("/etc/static", scorev1b1.ContainerFile{Content: ptr.To("${resources.db.host}"), NoExpand: ptr.To(true)}),
		withFile("/bin/blob", scorev1b1.ContainerFile{BinaryContent: ptr.To("AAEC")}),
	)
	claims := map[string]ClaimView{"db": ready("web-db-x", map[string]any{"host": "db.ns", "user": "app"}, "password")}
	res := planFor(t, w, claims)
	if len(res.Unresolved) > 0 {
		t.Fatalf("unresolved %v", res.Unresolved)
	}
	spec := res.Spec
	if spec.BackendID != "k8s-web" || spec.Template.Digest == "" || spec.ObservedWorkloadGeneration != 3 || spec.WorkloadRef.UID != "uid-1" {
		t.Fatalf("header %+v", spec)
	}
	var vals map[string]any
	_ = json.Unmarshal(spec.Values.Raw, &vals)
	if vals["replicas"] != float64(2) || vals["workload"].(map[string]any)["name"] != "web" {
		t.Fatalf("defaults ⊕ workload: %v", vals)
	}
	out := vals["resources"].(map[string]any)["db"].(map[string]any)["outputs"].(map[string]any)
	if out["host"] != "db.ns" || out["password"] != nil {
		t.Fatalf("outputs in values must be the non-secret ones: %v", out)
	}
	if strings.Contains(string(spec.Values.Raw), "password\":") {
		t.Fatalf("no secret in values: %s", spec.Values.Raw)
	}

	env := map[string]scorev1b1.EnvProjection{}
	for _, e := range spec.Projection.Containers[0].Env {
		env[e.Name] = e
	}
	if e := env["DB_PASSWORD"]; e.From == nil || *e.From != (scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}) {
		t.Fatalf("a lone output is a reference: %+v", e)
	}
	if e := env["PLAIN"]; e.Value == nil || *e.Value != "hello ${not-a-placeholder}" {
		t.Fatalf("escapes unescape: %+v", e)
	}
	if e := env["DB_URL"]; len(e.Parts) != 7 || *e.Parts[6].Literal != "/web" {
		t.Fatalf("mixed strings are parts with metadata substituted: %+v", e.Parts)
	}
	files := spec.Projection.Containers[0].Files
	if files[0].Target != "/bin/blob" || *files[0].BinaryContent != "AAEC" {
		t.Fatalf("binary file %+v", files[0])
	}
	if files[1].Target != "/etc/app.conf" || !files[1].Secret || *files[1].Mode != "0600" {
		t.Fatalf("a file with a secret output is secret: %+v", files[1])
	}
	if files[2].Secret || *files[2].Parts[0].Literal != "${resources.db.host}" {
		t.Fatalf("noExpand keeps the text: %+v", files[2])
	}
	if c := spec.Claims[0]; c.Key != "db" || c.SecretName != "web-db-x-outputs" || c.SecretKeys[0] != "password" {
		t.Fatalf("claims %+v", spec.Claims)
	}
}

func TestPlanWithheldWhileOutputsAreMissing(t *testing.T) {
	w := workload(withResource("db", "postgres", ""), withVar("DB", "${resources.db.host}"), withVar("P", "${resources.db.port}"))
	res := planFor(t, w, map[string]ClaimView{"db": ready("c", map[string]any{"host": "h"})})
	if res.Spec != nil || !reflect.DeepEqual(res.Unresolved, []string{"resources.db.port"}) {
		t.Fatalf("want no plan and port unresolved, got %+v", res)
	}
}

func TestPlanImageFromAndVolumes(t *testing.T) {
	w := workload(
		withContainer("main", scorev1b1.Container{Image: "."}),
		withResource("img", "build", ""),
		withResource("data", "volume", ""),
		withVolume("/data", "${resources.data}"),
		withVolume("/cache", "shared-cache"),
	)
	res := planFor(t, w, map[string]ClaimView{
		"img":  ready("c1", map[string]any{"image": "registry.local/web@sha256:abc"}),
		"data": ready("c2", map[string]any{"source": map[string]any{"emptyDir": map[string]any{}}}),
	})
	c := res.Spec.Projection.Containers[0]
	if c.ImageFrom == nil || *c.ImageFrom != (scorev1b1.OutputRef{ClaimKey: "img", OutputKey: "image"}) {
		t.Fatalf("imageFrom %+v", c.ImageFrom)
	}
	if c.Volumes[0].Target != "/cache" || *c.Volumes[0].Source != "shared-cache" || c.Volumes[1].From.ClaimKey != "data" {
		t.Fatalf("volumes %+v", c.Volumes)
	}
	var vals map[string]any
	_ = json.Unmarshal(res.Spec.Values.Raw, &vals)
	if _, hasImage := vals["containers"].(map[string]any)["main"].(map[string]any)["image"]; hasImage {
		t.Fatal("image . must not appear as a literal image")
	}
}

func TestBuildPlanIsDeterministic(t *testing.T) {
	w := workload(withResource("db", "postgres", ""), withResource("cache", "redis", ""),
		withVar("A", "${resources.db.host}"), withVar("B", "${resources.cache.host}:${resources.cache.port}"), withVar("C", "c"))
	claims := map[string]ClaimView{"db": ready("d", map[string]any{"host": "h"}), "cache": ready("c", map[string]any{"host": "r", "port": 6379}, "password")}
	first, _ := json.Marshal(planFor(t, w, claims).Spec)
	for i := 0; i < 100; i++ {
		again, _ := json.Marshal(planFor(t, w, claims).Spec)
		if string(again) != string(first) {
			t.Fatalf("run %d differs:\n%s\n%s", i, first, again)
		}
	}
}

func TestViewClaim(t *testing.T) {
	c := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 2}}
	c.Status = scorev1b1.ResourceClaimStatus{ObservedGeneration: 1, Phase: scorev1b1.ClaimPhaseBound, OutputsAvailable: true,
		Outputs: &apiextensionsv1.JSON{Raw: []byte(`{"host":"h"}`)}}
	if v := ViewClaim(c); v.Ready || v.OutputsAvailable || v.Phase != scorev1b1.ClaimPhasePending {
		t.Fatalf("a claim whose spec the provisioner has not seen is pending: %+v", v)
	}
	c.Status.ObservedGeneration = 2
	if v := ViewClaim(c); !v.Ready || v.Outputs["host"] != "h" {
		t.Fatalf("bound: %+v", v)
	}
	c.Status.OutputsAvailable = false
	if v := ViewClaim(c); v.Ready {
		t.Fatalf("bound with outputs not all available is not ready: %+v", v)
	}
	c.Status.Outputs = nil
	if v := ViewClaim(c); !v.Ready || !v.OutputsAvailable {
		t.Fatalf("bound with no outputs at all is ready: %+v", v)
	}
	c.Status.Phase, c.Status.OutputsAvailable, c.Status.Outputs = scorev1b1.ClaimPhaseBinding, true, &apiextensionsv1.JSON{Raw: []byte(`{"host":"h"}`)}
	if v := ViewClaim(c); v.Ready || !v.OutputsAvailable {
		t.Fatalf("binding with its outputs published: outputs available, not ready: %+v", v)
	}
	c.Status.OutputsAvailable = false
	if v := ViewClaim(c); v.OutputsAvailable {
		t.Fatalf("binding without its outputs: %+v", v)
	}
}

// The deprovision policy: the resource's annotation, else its class's, else its provisioner's,
// else Delete.
func TestDeprovisionPolicyPrecedence(t *testing.T) {
	provs := []orchconfig.Provisioner{
		{URI: "template://pg", Type: "postgres", DeprovisionPolicy: "Orphan"},
		{URI: "template://redis", Type: "redis"},
	}
	classes := []orchconfig.Class{
		{Type: "postgres", Name: "standard", Default: true},
		{Type: "postgres", Name: "ha", DeprovisionPolicy: "Retain"},
	}
	withClass := func(key, class string) opt {
		return func(w *scorev1b1.Workload) {
			r := w.Spec.Resources[key]
			r.Class = &class
			w.Spec.Resources[key] = r
		}
	}
	cases := []struct {
		name string
		opts []opt
		want scorev1b1.DeprovisionPolicy
	}{
		{"annotation beats class", []opt{withResource("r", "postgres", "", "score.dev/deprovision-policy", "Delete"), withClass("r", "ha")}, "Delete"},
		{"class beats provisioner", []opt{withResource("r", "postgres", ""), withClass("r", "ha")}, "Retain"},
		{"the default class has none: provisioner", []opt{withResource("r", "postgres", "")}, "Orphan"},
		{"neither: Delete", []opt{withResource("r", "redis", "")}, "Delete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DesiredClaims(ClaimsInput{Workload: workload(tc.opts...), Provisioners: provs, Classes: classes})
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Spec.DeprovisionPolicy != tc.want {
				t.Fatalf("want %s, got %s", tc.want, got[0].Spec.DeprovisionPolicy)
			}
		})
	}
}

// ${metadata.labels} sees the Workload's labels, but not the shard it is processed by:
// moving it to another shard changes neither its claims nor its plan.
func TestMetadataLeavesTheShardOut(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   map[string]any
	}{
		{map[string]string{"team": "a", scorev1b1.LabelShard: "blue"}, map[string]any{"team": "a"}},
		{map[string]string{scorev1b1.LabelShard: "blue"}, nil},
		{nil, nil},
	} {
		w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: tc.labels}}
		got, has := Metadata(w)["labels"]
		if tc.want == nil && has || tc.want != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("labels %v: metadata.labels %v, want %v", tc.labels, got, tc.want)
		}
	}
}

// appliedByKubectl records w as kubectl apply (client-side) does: the whole object, its spec
// among it, in the annotation kubectl.kubernetes.io/last-applied-configuration.
func appliedByKubectl(w *scorev1b1.Workload) {
	raw, err := json.Marshal(w)
	if err != nil {
		panic(err)
	}
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[corev1.LastAppliedConfigAnnotation] = string(raw)
}

// kubectl's record of a client-side apply is not Score metadata; it holds
// the whole Workload, its variables and files among it, which definitions otherwise never see.
// Neither ${metadata.annotations} nor a definition (the claim's params here; the Workload's
// metadata in provisioning.NewData) sees it; the other annotations stay.
func TestMetadataLeavesKubectlsRecordOut(t *testing.T) {
	w := workload(withVar("X", "🔐💬pg_password💬🔐"), func(w *scorev1b1.Workload) { w.Annotations = map[string]string{"team": "payments"} },
		appliedByKubectl, withResource("api", "endpoint", `{"annotations":"${metadata.annotations}"}`))
	if got, want := Metadata(w)["annotations"], map[string]any{"team": "payments"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("metadata.annotations %v, want %v", got, want)
	}
	if problems := CheckInputs(w, Allowed{}); len(problems) > 0 {
		t.Fatalf("problems %v", problems)
	}
	claims, err := DesiredClaims(ClaimsInput{Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(claims[0].Spec.Params.Raw); got != `{"annotations":"{\"team\":\"payments\"}"}` {
		t.Fatalf("params %s", got)
	}
}

// TestDesiredClaimsCheckTheParams: what a definition's supported params say of their values
// is checked once the params are resolved, and the Workload is told which param and why.
func TestDesiredClaimsCheckTheParams(t *testing.T) {
	provs := []orchconfig.Provisioner{
		{URI: "template://volume", Type: "volume", SupportedParams: []orchconfig.Param{{Name: "size", Type: "quantity"}}},
		{URI: "template://dns", Type: "dns"},
	}
	for _, tc := range []struct {
		name     string
		w        *scorev1b1.Workload
		observed map[string]ClaimView
		want     string // "" when the claims are made
	}{
		{"a quantity", workload(withResource("data", "volume", `{"size":"2Gi"}`)), nil, ""},
		{"the volume injection", workload(withResource("data", "volume", `{"size":"1Gi}}\n- kind: Pod"}`)), nil,
			`spec.resources.data.params.size: The value must be a Kubernetes quantity such as 1Gi or 500m, not "1Gi}}\n- kind: Pod".`},
		{"a param still waiting is not checked yet", workload(withResource("dns", "dns", ""), withResource("data", "volume", `{"size":"${resources.dns.host}"}`)), nil, ""},
		{"once resolved it is", workload(withResource("dns", "dns", ""), withResource("data", "volume", `{"size":"${resources.dns.host}"}`)),
			map[string]ClaimView{"dns": {Ready: true, Outputs: map[string]any{"host": "a b"}}},
			`spec.resources.data.params.size: The value must be a Kubernetes quantity such as 1Gi or 500m, not "a b".`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DesiredClaims(ClaimsInput{Workload: tc.w, Provisioners: provs, Observed: tc.observed})
			var problem Problem
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &problem) || problem.String() != tc.want):
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}
