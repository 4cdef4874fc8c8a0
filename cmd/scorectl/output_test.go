package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/configdiff"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/termtest"
)

// TestEveryPrintingPathEscapes feeds each of scorectl's printers a message full of terminal
// escapes where the cluster (or a file) gives it text: what is printed acts on no terminal
// and keeps each message on its line, so a tenant's text cannot rewrite what an operator
// reads. scorectl why is internal/status/why's
// TestWhyEscapesWhatItQuotes; the commands' writer is TestHumanOutputGoesThroughTermtext.
func TestEveryPrintingPathEscapes(t *testing.T) {
	h := termtest.Hostile
	conditions := []metav1.Condition{{Type: scorev1b1.ConditionReady, Status: metav1.ConditionFalse, Reason: "ClaimFailed", Message: h}}
	items := []scorev1b1.Workload{{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: scorev1b1.WorkloadStatus{Conditions: conditions, Endpoint: ptr.To("http://x/" + h)}}}
	registration := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "eu", Labels: map[string]string{"region": "eu"}}}
	for name, print := range map[string]func(*bytes.Buffer) error{
		"status": func(b *bytes.Buffer) error { return printStatus(b, items, "table") },
		"status -o wide": func(b *bytes.Buffer) error {
			return printWide(b, items, map[string][]copyView{"web": {{Name: "web", Cluster: "a", Message: h, Reason: h, Endpoint: h}, {Name: "web.1", Cluster: "b", Message: h}}})
		},
		"cluster list": func(b *bytes.Buffer) error {
			return printClusters(b, []metav1.PartialObjectMetadata{registration}, map[string]clusters.Status{"eu": {Version: h, Message: h, Since: &metav1.Time{Time: time.Now()}}}, nil)
		},
		"rollout status": func(b *bytes.Buffer) error {
			return printRollout(b, &scorev1b1.ConfigRollout{Spec: scorev1b1.ConfigRolloutSpec{To: "abc"}, Status: scorev1b1.ConfigRolloutStatus{Phase: "Halted", Message: h}})
		},
		"apply": func(b *bytes.Buffer) error {
			s := stateOf(client.ObjectKey{Name: "web"}, &items[0])
			b.WriteString(s.line() + "\n")
			printStates(b, []state{s})
			return nil
		},
		"preview list": func(b *bytes.Buffer) error {
			printPreviews(b, []previewRow{{refusal: h, state: "Refused"}}, time.Now())
			return nil
		},
		"config diff": func(b *bytes.Buffer) error {
			return printDiffs(b, []configdiff.Workload{{Name: "web", Changes: []configdiff.Change{{What: "value " + h}}, Objects: []configdiff.ObjectChange{{Action: "changed", Object: h}}}}, 0, "text")
		},
		"config validate": func(b *bytes.Buffer) error {
			return printReports(b, []fileReport{{File: "c.yaml", Errors: []orchconfig.FieldError{{Path: "profiles[0]", Message: h}}}}, "text")
		},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := print(&b); err != nil {
				t.Fatal(err)
			}
			termtest.Safe(t, name, b.String())
			if !strings.Contains(b.String(), termtest.Marker) {
				t.Errorf("the message is not shown, escaped:\n%s", b.String())
			}
		})
	}
}

// TestHumanOutputGoesThroughTermtext: what a command prints for a person passes termtext's
// writer; what convert, render and status print as data does not.
func TestHumanOutputGoesThroughTermtext(t *testing.T) {
	root := newRootCommand()
	for _, tc := range []struct {
		args    []string
		escaped bool
	}{
		{[]string{"why", "x"}, true},
		{[]string{"cluster", "list"}, true},
		{[]string{"preview", "list"}, true},
		{[]string{"rollout", "status"}, true},
		{[]string{"config", "diff"}, true},
		{[]string{"convert"}, false},
		{[]string{"render"}, false},
		{[]string{"status"}, false},
	} {
		cmd, _, err := root.Find(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		cmd.SetOut(&b)
		root.PersistentPreRun(cmd, nil)
		_, _ = cmd.OutOrStdout().Write([]byte(termtest.Hostile))
		if escaped := !strings.Contains(b.String(), "\x1b"); escaped != tc.escaped {
			t.Errorf("scorectl %s: escaped %v, want %v: %q", strings.Join(tc.args, " "), escaped, tc.escaped, b.String())
		}
		cmd.SetOut(nil)
	}
}
