package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/acceptance"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// corpusApps are the multi-Workload apps of the conformance corpus, and what each Workload
// comes to with the development catalog: Ready (""), or blocked by what the words say it needs.
var corpusApps = map[string]map[string]string{
	"samples/aks-store-demo":                 {"ai-service": "No provisioner serves llm-model"},
	"samples/onlineboutique":                 {},
	"score-compose/04-multiple-workloads":    {},
	"score-compose/06-resource-provisioning": {},
	"score-compose/08-service-port-resource": {},
	// The sample's backend declares no port, so there is no Service to reach.
	"community/service__score-k8s__10-service": {"frontend": "Waiting for workload backend to publish a port"},
}

// Each multi-Workload app of the corpus, applied as a user applies it (every file at once),
// takes every Workload to Ready on the simulated cluster — or to a status whose dependency
// names what the platform lacks. The HTTPRoutes the apps' route resources provision are
// accepted by the development cluster's gateway controller, which this package runs as make
// dev does.
func TestCorpusAppsBecomeReady(t *testing.T) {
	corpus := conformance.Require(t)
	_, files, err := acceptance.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, app := range acceptance.Apps(corpus, files) {
		if _, ok := corpusApps[app.Name]; ok {
			names = append(names, app.Name)
		}
	}
	sort.Strings(names)
	if len(names) != len(corpusApps) {
		t.Fatalf("the corpus holds apps %v, the test expects %d", names, len(corpusApps))
	}
	for i, app := range acceptance.Apps(corpus, files) {
		want, ok := corpusApps[app.Name]
		if !ok {
			continue
		}
		app := app
		t.Run(app.Name, func(t *testing.T) {
			ns := fmt.Sprintf("e2e-corpus-%d", i)
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			var workloads []string
			for _, f := range app.Files {
				results, err := scorefile.ReadFile(filepath.Join(corpus, f), scorefile.Options{Namespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range results {
					if err := c.Create(ctx, r.Workload); err != nil {
						t.Fatal(err)
					}
					workloads = append(workloads, r.Workload.Name)
				}
			}
			start := time.Now()
			testenv.Eventually(t, 4*time.Minute, "every Workload Ready or blocked as expected", func() error {
				var pending []string
				for _, name := range workloads {
					if msg := corpusOutcome(t, ns, name, want[name]); msg != "" {
						pending = append(pending, name+": "+msg)
					}
				}
				if len(pending) > 0 {
					return fmt.Errorf("%s", strings.Join(pending, "; "))
				}
				return nil
			})
			t.Logf("%d Workloads settled in %s", len(workloads), time.Since(start).Round(time.Second))
		})
	}
}

// corpusOutcome says why a Workload is not yet what the test expects ("" when it is): Ready
// with an endpoint when it publishes ports, or, when blocked names what blocks it, Ready=False
// with a dependency whose message says so.
func corpusOutcome(t *testing.T, ns, name, blocked string) string {
	w := &scorev1b1.Workload{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, w); err != nil {
		return err.Error()
	}
	ready := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
	if ready == nil || ready.ObservedGeneration != w.Generation {
		return "no status for its generation"
	}
	if blocked == "" {
		if ready.Status != metav1.ConditionTrue {
			return fmt.Sprintf("%s: %s", ready.Reason, ready.Message)
		}
		if w.Spec.Service != nil && len(w.Spec.Service.Ports) > 0 && w.Status.Endpoint == nil {
			return "no endpoint"
		}
		return ""
	}
	var claims scorev1b1.ResourceClaimList
	if err := c.List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
		return err.Error()
	}
	for _, cl := range claims.Items {
		if strings.Contains(cl.Status.Message, blocked) {
			if ready.Status == metav1.ConditionTrue {
				return "Ready although a dependency is blocked"
			}
			return ""
		}
	}
	return fmt.Sprintf("no dependency says %q yet (%s: %s)", blocked, ready.Reason, ready.Message)
}
