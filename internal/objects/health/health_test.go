package health

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestJudge(t *testing.T) {
	checker, err := New([]orchconfig.HealthRule{{
		APIVersion: "db.example.com/v1", Kind: "Database",
		Healthy: `has(self.status) && self.status.phase == "Online"`,
		Failed:  `has(self.status) && self.status.phase == "Error"`,
		Message: `has(self.status) && has(self.status.detail) ? self.status.detail : ""`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, doc, want, message string
	}{
		{"a rule: healthy", "apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: a}\nstatus: {phase: Online, detail: up}", scorev1b1.HealthCurrent, "up"},
		{"a rule: failed beats healthy", "apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: a}\nstatus: {phase: Error, detail: disk full}", scorev1b1.HealthFailed, "disk full"},
		{"a rule: neither is in progress", "apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: a}\nstatus: {phase: Creating}", scorev1b1.HealthInProgress, ""},
		{"a rule: no status yet is in progress, not an error", "apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: a}", scorev1b1.HealthInProgress, ""},
		{"no rule: kstatus judges a Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, generation: 2}\nspec: {replicas: 1}\nstatus: {observedGeneration: 1}", scorev1b1.HealthInProgress, "Deployment generation is 2, but latest observed generation is 1"},
		{"no rule: a ConfigMap is current", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}", scorev1b1.HealthCurrent, "Resource is always ready"},
		{"another version of the kind has no rule", "apiVersion: db.example.com/v2\nkind: Database\nmetadata: {name: a}\nstatus: {phase: Creating}", scorev1b1.HealthCurrent, "Resource is current"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, message := checker.Judge(obj(t, tc.doc))
			if got != tc.want || message != tc.message {
				t.Fatalf("got %s %q, want %s %q", got, message, tc.want, tc.message)
			}
		})
	}
	var none *Checker
	if got, _ := none.Judge(obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}")); got != scorev1b1.HealthCurrent {
		t.Fatalf("a nil checker judges by kstatus: %s", got)
	}
}

func TestNewRejectsBadRules(t *testing.T) {
	for name, r := range map[string]orchconfig.HealthRule{
		"healthy not a bool":  {APIVersion: "x/v1", Kind: "X", Healthy: `"yes"`},
		"failed not compiled": {APIVersion: "x/v1", Kind: "X", Healthy: "true", Failed: "self.("},
		"message not string":  {APIVersion: "x/v1", Kind: "X", Healthy: "true", Message: "1 + 1"},
	} {
		if _, err := New([]orchconfig.HealthRule{r}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestServing(t *testing.T) {
	cases := []struct {
		name string
		docs []string
		want bool
	}{
		{"a Deployment with an available replica", []string{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nstatus: {replicas: 3, availableReplicas: 1}"}, true},
		{"a Deployment with none", []string{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nstatus: {replicas: 3, availableReplicas: 0}"}, false},
		{"a StatefulSet with a ready replica", []string{"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a}\nstatus: {readyReplicas: 2}"}, true},
		{"a Service alone serves nothing", []string{"apiVersion: v1\nkind: Service\nmetadata: {name: a}"}, false},
		{"one of several", []string{"apiVersion: v1\nkind: Service\nmetadata: {name: a}", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: a}\nstatus: {numberAvailable: 1}"}, true},
	}
	for _, tc := range cases {
		if got := Serving(objects(t, tc.docs)); got != tc.want {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}

func TestServesNothing(t *testing.T) {
	cases := []struct {
		name string
		docs []string
		want bool
	}{
		{"a Job and its ConfigMap run to completion", []string{"apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}"}, true},
		{"a Deployment serves, available or not", []string{"apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nstatus: {availableReplicas: 0}"}, false},
		{"a StatefulSet serves", []string{"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a}"}, false},
	}
	for _, tc := range cases {
		if got := ServesNothing(objects(t, tc.docs)); got != tc.want {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}

func objects(t *testing.T, docs []string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		objs = append(objs, obj(t, d))
	}
	return objs
}
