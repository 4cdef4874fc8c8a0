package render

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/placeholder"
)

func templateFile(t testing.TB, name string) Template {
	t.Helper()
	b, err := os.ReadFile("../../../config/templates/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return Template{Data: b}
}

func lit(s string) *string { return &s }

func plan(values string, containers ...scorev1b1.ContainerProjection) *scorev1b1.WorkloadPlanSpec {
	return &scorev1b1.WorkloadPlanSpec{
		Values:     &apiextensionsv1.JSON{Raw: []byte(values)},
		Projection: scorev1b1.Projection{Containers: containers},
		Claims:     []scorev1b1.PlanClaim{{Key: "db", ClaimName: "web-db-x", SecretName: "web-db-x-outputs", SecretKeys: []string{"password"}}},
	}
}

const values = `{
  "replicas": 2,
  "containers": {"main": {"image": "nginx:1.27", "resources": {"limits": {"cpu": "1"}},
     "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "exec": {"command": ["true"]}},
     "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}}},
   "migrate": {"image": "migrate:1", "before": {}},
   "proxy": {"image": "envoy:1"}},
  "service": {"ports": {"http": {"port": 80, "targetPort": 8080, "protocol": "TCP"}}},
  "resources": {"db": {"type": "postgres", "outputs": {"host": "db.ns", "port": 5432, "nested": {"k": "v"}}},
                "data": {"type": "volume", "outputs": {"source": {"emptyDir": {}}}}}
}`

func mainContainer() scorev1b1.ContainerProjection {
	return scorev1b1.ContainerProjection{
		Name: "main",
		Env: []scorev1b1.EnvProjection{
			{Name: "DB_HOST", ValueProjection: scorev1b1.ValueProjection{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}},
			{Name: "DB_PASSWORD", ValueProjection: scorev1b1.ValueProjection{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}}},
			{Name: "DB_URL", ValueProjection: scorev1b1.ValueProjection{Parts: []scorev1b1.ValuePart{
				{Literal: lit("postgres://app:")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}},
				{Literal: lit("@")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}, {Literal: lit(":")},
				{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "port"}}}}},
			{Name: "LITERAL", ValueProjection: scorev1b1.ValueProjection{Value: lit("keep $(HOME) as text")}},
		},
		Args:    []scorev1b1.ValueProjection{{Value: lit("--port=8080")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "nested.k"}}},
		Files:   []scorev1b1.FileProjection{{Target: "/etc/app/app.conf", Mode: lit("0600"), Parts: []scorev1b1.ValuePart{{Literal: lit("host=")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}}}},
		Volumes: []scorev1b1.VolumeProjection{{Target: "/data", From: &scorev1b1.OutputRef{ClaimKey: "data"}, ReadOnly: ptr.To(true)}},
	}
}

func byKind(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func TestRenderWebService(t *testing.T) {
	spec := plan(strings.Replace(values, `"before": {}`, `"before": {}`, 1), mainContainer())
	var v map[string]any
	_ = json.Unmarshal(spec.Values.Raw, &v)
	v["containers"].(map[string]any)["main"].(map[string]any)["before"] = map[string]any{"migrate": map[string]any{"ready": "complete"}, "proxy": map[string]any{"ready": "started"}}
	spec.Values.Raw, _ = json.Marshal(v)
	spec.Projection.Containers = append(spec.Projection.Containers, scorev1b1.ContainerProjection{Name: "migrate"}, scorev1b1.ContainerProjection{Name: "proxy"})

	objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: spec, Template: templateFile(t, "web-service.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	sort.Strings(kinds) // the applier orders them for apply
	if strings.Join(kinds, ",") != "ConfigMap,Deployment,Service" {
		t.Fatalf("objects %v", kinds)
	}
	dep := byKind(objs, "Deployment")
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 2 {
		t.Fatalf("replicas %d", r)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("containers %v", containers)
	}
	c := containers[0].(map[string]any)
	env := map[string]map[string]any{}
	for _, e := range c["env"].([]any) {
		env[e.(map[string]any)["name"].(string)] = e.(map[string]any)
	}
	if env["DB_HOST"]["value"] != "db.ns" {
		t.Errorf("non-secret outputs are inlined: %v", env["DB_HOST"])
	}
	if ref := env["DB_PASSWORD"]["valueFrom"].(map[string]any)["secretKeyRef"].(map[string]any); ref["name"] != "web-db-x-outputs" || ref["key"] != "password" {
		t.Errorf("secret outputs are secretKeyRefs: %v", ref)
	}
	if env["DB_URL"]["value"] != "postgres://app:$(SCORE_SECRET_DB_URL_1)@db.ns:5432" || env["SCORE_SECRET_DB_URL_1"] == nil {
		t.Errorf("mixed strings compose with $(VAR): %v", env["DB_URL"])
	}
	if env["LITERAL"]["value"] != "keep $$(HOME) as text" {
		t.Errorf("a literal $( is escaped: %v", env["LITERAL"])
	}
	if args := c["args"].([]any); args[1] != "v" {
		t.Errorf("args %v", args)
	}
	if lp := c["livenessProbe"].(map[string]any); lp["exec"] == nil || lp["httpGet"] != nil {
		t.Errorf("exec is preferred: %v", lp)
	}
	if c["resources"] == nil || c["readinessProbe"] == nil {
		t.Errorf("resources and probes: %v", c)
	}
	mounts := c["volumeMounts"].([]any)
	if m := mounts[0].(map[string]any); m["mountPath"] != "/etc/app/app.conf" || m["subPath"] == nil {
		t.Errorf("files are mounted one by one: %v", m)
	}
	inits, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "initContainers")
	if len(inits) != 2 || inits[1].(map[string]any)["restartPolicy"] != "Always" || inits[0].(map[string]any)["restartPolicy"] != nil {
		t.Errorf("before: complete → init container, started → native sidecar: %v", inits)
	}
	vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	if len(vols) != 2 || vols[1].(map[string]any)["emptyDir"] == nil {
		t.Errorf("volumes %v", vols)
	}
	cm := byKind(objs, "ConfigMap")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	for _, content := range data {
		if content != "host=db.ns" {
			t.Errorf("file content %q", content)
		}
	}
	svc := byKind(objs, "Service")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if p := ports[0].(map[string]any); p["port"] != int64(80) || p["targetPort"] != int64(8080) {
		t.Errorf("ports %v", ports)
	}
	raw, _ := json.Marshal(objs)
	if strings.Contains(string(raw), "password\":\"") {
		t.Fatalf("no secret value may be rendered: %s", raw)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	tpl := templateFile(t, "web-service.yaml")
	first, err := Render(Input{Workload: "web", Namespace: "ns", Spec: plan(values, mainContainer()), Template: tpl})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(first)
	for i := 0; i < 100; i++ {
		again, _ := Render(Input{Workload: "web", Namespace: "ns", Spec: plan(values, mainContainer()), Template: tpl})
		if got, _ := json.Marshal(again); string(got) != string(want) {
			t.Fatalf("render %d differs", i)
		}
	}
}

// Workload values reach templates as data: template syntax, placeholders and YAML are
// rendered literally and cannot add fields or objects.
func TestValuesCannotInjectTemplatesOrObjects(t *testing.T) {
	attacks := []string{
		"{{ .Workload.Name }}",
		"${resources.db.password}",
		"x\"\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwn}",
		"'}, {\"name\": \"INJECTED\", \"value\": \"1\"}], \"hostNetwork\": true, \"x\": [{'",
	}
	for _, a := range attacks {
		c := scorev1b1.ContainerProjection{Name: "main", Env: []scorev1b1.EnvProjection{{Name: "ATTACK", ValueProjection: scorev1b1.ValueProjection{Value: lit(a)}}},
			Args: []scorev1b1.ValueProjection{{Value: lit(a)}}}
		v := strings.Replace(values, `"nginx:1.27"`, mustJSON(a), 1)
		objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: plan(v, c), Template: templateFile(t, "web-service.yaml")})
		if err != nil {
			t.Fatalf("%q: %v", a, err)
		}
		if len(objs) != 2 {
			t.Fatalf("%q added objects: %d", a, len(objs))
		}
		dep := byKind(objs, "Deployment")
		spec, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
		if len(spec) != 2 || spec["automountServiceAccountToken"] != false {
			t.Fatalf("%q added pod fields: %v", a, spec)
		}
		c0 := spec["containers"].([]any)[0].(map[string]any)
		if c0["image"] != a || c0["args"].([]any)[0] != strings.ReplaceAll(a, "$(", "$$(") || len(c0["env"].([]any)) != 1 {
			t.Fatalf("%q was not kept literally: %v", a, c0)
		}
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestRenderBatchJob(t *testing.T) {
	objs, err := Render(Input{Workload: "report", Namespace: "ns", Spec: plan(`{"containers": {"main": {"image": "busybox"}}}`, scorev1b1.ContainerProjection{Name: "main"}), Template: templateFile(t, "batch-job.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	job := byKind(objs, "Job")
	if job == nil || !strings.HasPrefix(job.GetName(), "report-") || len(job.GetName()) != len("report-")+8 {
		t.Fatalf("job %v", objs)
	}
	other, _ := Render(Input{Workload: "report", Namespace: "ns", Spec: plan(`{"containers": {"main": {"image": "busybox:2"}}}`, scorev1b1.ContainerProjection{Name: "main"}), Template: templateFile(t, "batch-job.yaml")})
	if byKind(other, "Job").GetName() == job.GetName() {
		t.Fatal("a new input is a new Job")
	}
}

// The web-service template exposes the Service beyond the cluster when the backend's values
// ask: a load balancer, an Ingress (with TLS) and an HTTPRoute, each for
// <workload>.<namespace>.<domain> and the first port.
func TestRenderWebServiceExposure(t *testing.T) {
	spec := plan(values, mainContainer())
	var v map[string]any
	_ = json.Unmarshal(spec.Values.Raw, &v)
	v["expose"] = map[string]any{
		"serviceType": "LoadBalancer",
		"ingress":     map[string]any{"domain": "apps.example.com", "className": "public", "tlsSecretName": "wildcard"},
		"route":       map[string]any{"domain": "apps.example.com", "gateway": map[string]any{"name": "public", "namespace": "infra", "sectionName": "https"}},
	}
	spec.Values.Raw, _ = json.Marshal(v)
	objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: spec, Template: templateFile(t, "web-service.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, _ := unstructured.NestedString(byKind(objs, "Service").Object, "spec", "type"); typ != "LoadBalancer" {
		t.Errorf("service type %q", typ)
	}
	ing := byKind(objs, "Ingress")
	if ing == nil {
		t.Fatal("no Ingress")
	}
	rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
	tls, _, _ := unstructured.NestedSlice(ing.Object, "spec", "tls")
	class, _, _ := unstructured.NestedString(ing.Object, "spec", "ingressClassName")
	if len(rules) != 1 || rules[0].(map[string]any)["host"] != "web.ns.apps.example.com" || len(tls) != 1 || class != "public" {
		t.Errorf("ingress %v", ing.Object["spec"])
	}
	route := byKind(objs, "HTTPRoute")
	if route == nil {
		t.Fatal("no HTTPRoute")
	}
	hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	parents, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
	if len(hosts) != 1 || hosts[0] != "web.ns.apps.example.com" || parents[0].(map[string]any)["sectionName"] != "https" {
		t.Errorf("route %v", route.Object["spec"])
	}
	if route.GetLabels()[scorev1b1.LabelWorkload] != "web" || ing.GetLabels()[scorev1b1.LabelWorkload] != "web" {
		t.Error("exposure objects carry the workload label")
	}
}

// A label change on a batch Workload does not run its Job again: the run's name hashes the
// plan without the Workload's metadata.
func TestInputHashIgnoresWorkloadMetadata(t *testing.T) {
	pod := map[string]any{"containers": []any{map[string]any{"name": "main", "image": "busybox:1.37"}}}
	ref := scorev1b1.TemplateRef{Kind: "manifests", Ref: "configmap://ns/t", Digest: "sha256:aa"}
	base := inputHash(pod, map[string]any{"workload": map[string]any{"labels": map[string]any{}}, "backoffLimit": 3}, ref)
	cases := []struct {
		name string
		hash string
		same bool
	}{
		{"a label change", inputHash(pod, map[string]any{"workload": map[string]any{"labels": map[string]any{"team": "a"}}, "backoffLimit": 3}, ref), true},
		{"an image change", inputHash(map[string]any{"containers": []any{map[string]any{"name": "main", "image": "busybox:1.38"}}}, map[string]any{"backoffLimit": 3}, ref), false},
		{"a backend value change", inputHash(pod, map[string]any{"backoffLimit": 4}, ref), false},
		{"another template", inputHash(pod, map[string]any{"backoffLimit": 3}, scorev1b1.TemplateRef{Kind: "manifests", Ref: "configmap://ns/t", Digest: "sha256:bb"}), false},
	}
	for _, tc := range cases {
		if (tc.hash == base) != tc.same {
			t.Errorf("%s: hash %s, base %s, want same=%v", tc.name, tc.hash, base, tc.same)
		}
	}
}

// The stateful template runs the pod as a StatefulSet with a headless Service for stable pod
// names, and publishes the ports through a Service of the Workload's name.
func TestRenderStateful(t *testing.T) {
	objs, err := Render(Input{Workload: "db", Namespace: "ns", Spec: plan(values, mainContainer()), Template: templateFile(t, "stateful.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	sort.Strings(kinds) // the applier orders them for apply
	if got := strings.Join(kinds, ","); got != "ConfigMap/db-files-1801910e,Service/db,Service/db-pods,StatefulSet/db" {
		t.Fatalf("objects %s", got)
	}
	sts := byKind(objs, "StatefulSet")
	if name, _, _ := unstructured.NestedString(sts.Object, "spec", "serviceName"); name != "db-pods" {
		t.Errorf("serviceName %q", name)
	}
	vols, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "volumes")
	if len(vols) == 0 {
		t.Error("the projected volumes reach the StatefulSet")
	}
	for _, o := range objs {
		if o.GetKind() == "Service" && o.GetName() == "db-pods" {
			if ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP"); ip != "None" {
				t.Errorf("the pods' Service is headless: %q", ip)
			}
		}
	}
}

// A file composed with a secret output is mounted from a Secret of the runtime's own, with
// the value the runtime read; the text files stay in the ConfigMap. Both are named after
// their content, so a content change rolls the pods.
func TestRenderFilesWithSecrets(t *testing.T) {
	secretFile := scorev1b1.FileProjection{Target: "/etc/app/db.env", Mode: lit("0400"), Secret: true, Parts: []scorev1b1.ValuePart{
		{Literal: lit("PASSWORD=")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}},
		{Literal: lit("\nHOST=")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}}}
	c := mainContainer()
	c.Files = append(c.Files, secretFile)
	read := func(ref scorev1b1.OutputRef) (string, error) {
		if ref.ClaimKey != "db" || ref.OutputKey != "password" {
			t.Fatalf("asked for %+v", ref)
		}
		return "s3cr3t", nil
	}
	render := func(password string, text string) []*unstructured.Unstructured {
		t.Helper()
		cc := c
		cc.Files = append([]scorev1b1.FileProjection{{Target: "/etc/app/app.conf", Parts: []scorev1b1.ValuePart{{Literal: lit(text)}}}}, secretFile)
		objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: plan(values, cc), Template: templateFile(t, "web-service.yaml"),
			SecretValue: func(ref scorev1b1.OutputRef) (string, error) { _, _ = read(ref); return password, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	objs := render("s3cr3t", "a=1")
	sec := byKind(objs, "Secret")
	if sec == nil || !strings.HasPrefix(sec.GetName(), "web-secret-files-") {
		t.Fatalf("no files Secret: %v", sec)
	}
	data, _, _ := unstructured.NestedStringMap(sec.Object, "data")
	key := FileKey("main", "/etc/app/db.env")
	if got, _ := base64.StdEncoding.DecodeString(data[key]); string(got) != "PASSWORD=s3cr3t\nHOST=db.ns" {
		t.Fatalf("content %q", got)
	}
	cm := byKind(objs, "ConfigMap")
	if cmData, _, _ := unstructured.NestedStringMap(cm.Object, "data"); strings.Contains(fmt.Sprint(cmData), "s3cr3t") || len(cmData) != 1 {
		t.Fatalf("the ConfigMap holds the text files only: %v", cmData)
	}
	dep := byKind(objs, "Deployment")
	vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	var secretVol map[string]any
	for _, v := range vols {
		if v.(map[string]any)["name"] == "score-secret-files" {
			secretVol = v.(map[string]any)["secret"].(map[string]any)
		}
	}
	if secretVol == nil || secretVol["secretName"] != sec.GetName() {
		t.Fatalf("the secret volume: %v", vols)
	}
	if strings.Contains(fmt.Sprint(dep.Object), "s3cr3t") {
		t.Fatal("the secret value reached the Deployment")
	}

	rotated := byKind(render("n3w", "a=1"), "Secret")
	edited := byKind(render("s3cr3t", "a=2"), "ConfigMap")
	if rotated.GetName() == sec.GetName() || edited.GetName() == cm.GetName() {
		t.Fatalf("a content change is a new name: %s %s, %s %s", sec.GetName(), rotated.GetName(), cm.GetName(), edited.GetName())
	}
	if _, err := Render(Input{Workload: "web", Namespace: "ns", Spec: plan(values, c), Template: templateFile(t, "web-service.yaml")}); err == nil || !strings.Contains(err.Error(), "no secret values are available") {
		t.Fatalf("without secret values: %v", err)
	}
}

// The pods of a Workload carry one consumer label per claimed instance, which the
// instance's NetworkPolicy admits.
func TestPodsCarryConsumerLabels(t *testing.T) {
	spec := plan(values, mainContainer())
	spec.Claims[0].Instance = "0123456789abcdef"
	objs, err := Render(Input{Workload: "web", Namespace: "ns", Spec: spec, Template: templateFile(t, "web-service.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	labels, _, _ := unstructured.NestedStringMap(byKind(objs, "Deployment").Object, "spec", "template", "metadata", "labels")
	if labels[scorev1b1.LabelConsumerPrefix+"0123456789abcdef"] != "true" {
		t.Fatalf("pod labels %v", labels)
	}
	selector, _, _ := unstructured.NestedStringMap(byKind(objs, "Deployment").Object, "spec", "selector", "matchLabels")
	if len(selector) != 1 {
		t.Fatalf("the selector stays the Workload's own: %v", selector)
	}
}

// Quantities are rendered as the API server stores them: otherwise a Workload asking for cpu
// "1000m" would be applied again on every pass (the API server stores "1").
func TestQuantitiesAreCanonical(t *testing.T) {
	for in, want := range map[string]string{"1000m": "1", "512Mi": "512Mi", "0.5": "500m", "1Gi": "1Gi", "100m": "100m"} {
		got := canonicalQuantities(map[string]any{"limits": map[string]any{"cpu": in}})
		if cpu := got["limits"].(map[string]any)["cpu"]; cpu != want {
			t.Errorf("%s rendered as %v, want %s", in, cpu, want)
		}
	}
}

// What the runtime writes into a pod from a plan is bounded as the planner bounds the plan:
// a file that names a large secret output many times is refused, before the text is built
// (the planner cannot see a secret's size, so the runtime bounds it again).
func TestSecretFileExpansionIsBounded(t *testing.T) {
	var parts []scorev1b1.ValuePart
	for range 400 {
		parts = append(parts, scorev1b1.ValuePart{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}})
	}
	c := mainContainer()
	c.Files = append(c.Files, scorev1b1.FileProjection{Target: "/etc/app/big", Secret: true, Parts: parts})
	big := strings.Repeat("s", 60<<10)
	_, err := Render(Input{Workload: "web", Namespace: "ns", Spec: plan(values, c), Template: templateFile(t, "web-service.yaml"),
		SecretValue: func(scorev1b1.OutputRef) (string, error) { return big, nil }})
	var tooLarge *placeholder.TooLarge
	if !errors.As(err, &tooLarge) {
		t.Fatalf("want a refusal for the size, got %v", err)
	}
	if strings.Contains(err.Error(), big[:64]) {
		t.Fatal("the refusal carries the secret value")
	}
}
