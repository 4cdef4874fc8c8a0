package workloadstatus_test

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/planner"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloadstatus"
)

// Messages from selection and from the input checks reach the Workload's status too: they
// must be neutral as well.
func TestSelectionAndInputMessagesAreNeutral(t *testing.T) {
	w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	cfg := &orchconfig.Config{Profiles: []orchconfig.Profile{{Name: "web-service", Backends: []orchconfig.Backend{{BackendID: "b", Version: "1.0.0", Constraints: orchconfig.Constraints{Features: []string{"x"}}}}}}}
	sel, err := selection.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, anns := range []map[string]string{
		{scorev1b1.AnnotationProfile: "function"},
		{scorev1b1.AnnotationRequirements: "[bad"},
		{scorev1b1.AnnotationRequirements: "gpu", scorev1b1.AnnotationProfile: "web-service"},
		{},
	} {
		w.Annotations = anns
		if r := sel.Select(selection.Input{Workload: w}); !r.OK {
			msgs = append(msgs, r.Message)
		}
	}
	bad := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: scorev1b1.WorkloadSpec{
		Containers: map[string]scorev1b1.Container{
			"main": {Image: ".", Variables: map[string]string{"A": "${resources.db.host}", "B": "${metadata.nope}", "C": "${x.y}", "D": "${resources}"},
				Files:   map[string]scorev1b1.ContainerFile{"/f": {Source: ptr.To("f")}},
				Volumes: map[string]scorev1b1.ContainerVolume{"/v": {Source: "a-${resources.vol}"}},
				Before:  map[string]scorev1b1.ContainerBefore{"side": {Ready: "started"}}},
			"side": {Image: "x", Before: map[string]scorev1b1.ContainerBefore{"main": {Ready: "started"}}},
		},
		Resources: map[string]scorev1b1.Resource{
			"vol":   {Type: "volume", Metadata: &apiextensionsv1.JSON{Raw: []byte(`{"annotations":{"score.dev/deprovision-policy":"Keep"}}`)}},
			"aa":    {Type: "t", Params: &apiextensionsv1.JSON{Raw: []byte(`{"x":"${resources.bb.y}"}`)}},
			"bb":    {Type: "t", Params: &apiextensionsv1.JSON{Raw: []byte(`{"x":"${resources.aa.y}"}`)}},
			"whole": {Type: "t", Params: &apiextensionsv1.JSON{Raw: []byte(`{"x":"${resources.vol}"}`)}},
		},
	}}
	problems := planner.CheckInputs(bad, planner.Allowed{})
	if len(problems) < 8 {
		t.Fatalf("expected many problems, got %v", problems)
	}
	for _, p := range problems {
		msgs = append(msgs, workloadstatus.SpecInvalid(p.String(), 0).Message)
	}
	for _, m := range msgs {
		if n := workloadstatus.RuntimeNoun(m); n != "" {
			t.Errorf("%q names %q", m, n)
		}
		if !strings.HasSuffix(m, ".") {
			t.Errorf("%q is not a sentence", m)
		}
	}
}
