package runnable

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func object(t *testing.T, doc string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const job = `
apiVersion: batch/v1
kind: Job
metadata:
  name: build-web
  annotations: {score.dev/image: "registry.score.test/team/web:abc"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: build, image: "kaniko:1", args: ["--revision=abc"]}]`

func TestStamp(t *testing.T) {
	a, err := Stamp(object(t, job), "team", "i123")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Stamp(object(t, job), "team", "i123")
	changed, _ := Stamp(object(t, strings.Replace(job, "--revision=abc", "--revision=def", 1)), "team", "i123")
	unnamed, _ := Stamp(object(t, strings.Replace(job, "name: build-web\n", "", 1)), "team", "i123")
	if !strings.HasPrefix(a.GetName(), "build-web-") || len(a.GetName()) != len("build-web-")+8 {
		t.Errorf("name %s", a.GetName())
	}
	if again.GetName() != a.GetName() {
		t.Errorf("the same inputs give the same run: %s %s", a.GetName(), again.GetName())
	}
	if changed.GetName() == a.GetName() {
		t.Errorf("a changed input gives a new run: %s", changed.GetName())
	}
	if !strings.HasPrefix(unnamed.GetName(), "run-i123-") {
		t.Errorf("without a name: %s", unnamed.GetName())
	}
	if a.GetNamespace() != "team" || a.GetLabels()[scorev1b1.LabelRunOf] != "i123" {
		t.Errorf("namespace %s labels %v", a.GetNamespace(), a.GetLabels())
	}
	long, _ := Stamp(object(t, strings.Replace(job, "build-web", strings.Repeat("x", 80), 1)), "team", "i")
	if len(long.GetName()) > 63 {
		t.Errorf("name too long: %d", len(long.GetName()))
	}
	if _, err := Stamp(map[string]any{"metadata": map[string]any{"name": "x"}}, "team", "i"); err == nil {
		t.Error("a run without a kind is refused")
	}
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name, status, success string
		want                  Outcome
		message               string
	}{
		{"no status", "", "Complete", Running, ""},
		{"a Job complete", "conditions: [{type: Complete, status: 'True'}]", "Complete", Succeeded, ""},
		{"a Job failed", "conditions: [{type: Failed, status: 'True', reason: BackoffLimitExceeded}]", "Complete", Failed, "BackoffLimitExceeded"},
		{"Tekton succeeded", "conditions: [{type: Succeeded, status: 'True', message: done}]", "Succeeded", Succeeded, "done"},
		{"Tekton failed", "conditions: [{type: Succeeded, status: 'False', message: step build failed}]", "Succeeded", Failed, "step build failed"},
		{"Tekton running", "conditions: [{type: Succeeded, status: Unknown}]", "Succeeded", Running, ""},
		{"another condition", "conditions: [{type: Suspended, status: 'True'}]", "Complete", Running, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: v1\nkind: X\nmetadata: {name: a}\n"
			if tc.status != "" {
				doc += "status:\n  " + tc.status + "\n"
			}
			got, msg := Judge(&unstructured.Unstructured{Object: object(t, doc)}, tc.success)
			if got != tc.want || msg != tc.message {
				t.Fatalf("got %s %q, want %s %q", got, msg, tc.want, tc.message)
			}
		})
	}
	if SuccessCondition("", "Job") != "Complete" || SuccessCondition("", "PipelineRun") != "Succeeded" || SuccessCondition("Done", "Job") != "Done" {
		t.Error("success condition defaults")
	}
}

func TestOutputs(t *testing.T) {
	run := &unstructured.Unstructured{Object: object(t, job+"\nstatus:\n  results: [{name: digest, value: 'sha256:aa'}, {name: size, value: '12'}]\n")}
	got, err := Outputs(run, map[string]string{
		"image":  `{.metadata.annotations.score\.dev/image}`,
		"digest": `{.status.results[?(@.name=="digest")].value}`,
		"names":  `{.status.results[*].name}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["image"] != "registry.score.test/team/web:abc" || got["digest"] != "sha256:aa" || got["names"] != "digest size" {
		t.Fatalf("outputs %v", got)
	}
	if _, err := Outputs(run, map[string]string{"missing": "{.status.nothing}"}); err == nil || !strings.Contains(err.Error(), "output missing: nothing at") {
		t.Fatalf("a path that finds nothing: %v", err)
	}
	if _, err := Outputs(run, map[string]string{"bad": "{.status["}); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("a path that does not parse: %v", err)
	}
}

func TestCollect(t *testing.T) {
	at := func(name string, minute int) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		u.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC)))
		return u
	}
	runs := []*unstructured.Unstructured{at("a", 1), at("b", 2), at("c", 3), at("d", 4), at("e", 5)}
	names := func(us []*unstructured.Unstructured) string {
		var out []string
		for _, u := range us {
			out = append(out, u.GetName())
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		name, current string
		limit         int
		want          string
	}{
		{"keep the three newest", "e", 3, "b,a"},
		{"the current run is kept even when older", "a", 3, "c,b"},
		{"limit one keeps the current run only", "e", 1, "d,c,b,a"},
		{"the default limit", "e", 0, "b,a"},
		{"nothing to collect", "e", 10, ""},
	}
	for _, tc := range cases {
		if got := names(Collect(runs, tc.current, tc.limit)); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
