package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	previewcontroller "github.com/score-orchestrator/score-orchestrator/internal/controller/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The preview controller must not record its PreviewNotEnded warning on every pass over an
// expired preview it may not act on: every config or policy change brings every preview back.
// The controller's passes here are its Reconcile, called as its watches call it,
// over what this API server holds; the warning is said once, and again only on a transition:
// when why or when it expired changes, or when the preview expires anew.
func TestPreviewNotEndedIsSaidOnTransitionsOnly(t *testing.T) {
	installPolicies(t)
	// The policy goes (as on a cluster where it was never installed): no preview is trusted.
	for _, o := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicy{}} {
		o.SetName(preview.PolicyName)
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		testenv.WaitGone(t, env.Client, o)
	}
	t.Cleanup(func() { testenv.InstallPreviewPolicy(t, env.Client) })

	text, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "templates", "web-service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(configTemplate, testenv.Digest(text))
	store := configsource.NewStore()
	if _, err := store.Offer("1", []byte(config)); err != nil {
		t.Fatal(err)
	}
	store.Settle()
	recorder := events.NewFakeRecorder(100)
	r := &previewcontroller.Reconciler{Client: env.Client, Config: store, Recorder: recorder}

	ns := previewOf("said-once", testenv.Username(t, env.Client)) // the policy may be in force a moment longer
	ns.Annotations["score.dev/preview-expires"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	testenv.Create(t, env.Client, ns)
	expire := func(at time.Time) {
		t.Helper()
		if err := env.Client.Patch(ctx, ns, mergePatch(`{"annotations":{"score.dev/preview-expires":"`+at.UTC().Format(time.RFC3339)+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	// pass is one pass of the controller over the preview; it returns the events it recorded.
	pass := func(t *testing.T) []string {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: ns.Name}}); err != nil {
			t.Fatal(err)
		}
		var said []string
		for {
			select {
			case e := <-recorder.Events:
				said = append(said, e)
			default:
				return said
			}
		}
	}
	saidOnce := func(t *testing.T, said []string, text string) {
		t.Helper()
		if len(said) != 1 || !strings.Contains(said[0], "Warning PreviewNotEnded") || !strings.Contains(said[0], text) {
			t.Fatalf("events %q, want one PreviewNotEnded saying %q", said, text)
		}
	}
	nothingSaid := func(t *testing.T, said []string) {
		t.Helper()
		if len(said) > 0 {
			t.Fatalf("events %q, want none", said)
		}
	}

	t.Run("found expired: said", func(t *testing.T) {
		saidOnce(t, pass(t), "is not bound to its maker")
	})
	t.Run("a pass that finds it the same (a policy change brings it back): nothing", func(t *testing.T) {
		nothingSaid(t, pass(t))
	})
	t.Run("a config change that leaves its expiry: nothing", func(t *testing.T) {
		if _, err := store.Offer("2", []byte(config+"previews: {max: 3}\n")); err != nil {
			t.Fatal(err)
		}
		nothingSaid(t, pass(t))
	})
	t.Run("another label of its own: nothing", func(t *testing.T) {
		if err := env.Client.Patch(ctx, ns, mergePatch(`{"labels":{"team":"x"}}`)); err != nil {
			t.Fatal(err)
		}
		nothingSaid(t, pass(t))
	})
	earlier := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	t.Run("its expiry changes: said", func(t *testing.T) {
		expire(earlier)
		saidOnce(t, pass(t), "expired at "+earlier.UTC().Format(time.RFC3339))
		nothingSaid(t, pass(t))
	})
	t.Run("not expired: nothing; expired anew: said", func(t *testing.T) {
		expire(time.Now().Add(time.Hour))
		nothingSaid(t, pass(t))
		expire(earlier)
		saidOnce(t, pass(t), "expired at "+earlier.UTC().Format(time.RFC3339))
	})
}
