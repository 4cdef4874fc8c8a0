package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// This file runs first (files run in name order): it starts without any config.
func TestConfigLifecycle(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	testenv.Create(t, env.Client, workload(ns, "early"))

	t.Run("before any valid config the Workload waits neutrally", func(t *testing.T) {
		w := conditionIs(t, ns, "early", scorev1b1.ConditionRuntimeReady, metav1.ConditionFalse, scorev1b1.ReasonRuntimeSelecting)
		if msg := testenv.Condition(w, scorev1b1.ConditionRuntimeReady).Message; msg != "Waiting for the platform configuration." {
			t.Fatalf("message %q", msg)
		}
	})

	t.Run("an invalid first config is reported on the ConfigMap and not used", func(t *testing.T) {
		applyConfig(t, strings.Replace(baseConfig, "version: 1.0.0", "version: one", 1))
		waitForConfigEvent(t, "ConfigInvalid", "profiles[0].backends[0].version")
		// The config source has judged the config; a pass after that still finds none.
		w := requestReconcile(t, ns, "early")
		if c := testenv.Condition(w, scorev1b1.ConditionRuntimeReady); c.Reason != string(scorev1b1.ReasonRuntimeSelecting) || c.Message != "Waiting for the platform configuration." {
			t.Fatalf("runtime is %s: %s", c.Reason, c.Message)
		}
	})

	t.Run("a valid config is picked up by waiting Workloads", func(t *testing.T) {
		applyConfig(t, baseConfig)
		conditionIs(t, ns, "early", scorev1b1.ConditionRuntimeReady, metav1.ConditionUnknown, scorev1b1.ReasonRuntimeProvisioning)
		if p := planOf(t, ns, "early"); p.Spec.BackendID != "k8s-web" {
			t.Fatalf("backend %s", p.Spec.BackendID)
		}
	})

	t.Run("an invalid config never replaces the last valid one", func(t *testing.T) {
		applyConfig(t, strings.Replace(baseConfig, "defaults:\n  profile: web-service", "defaults:\n  profile: nothing", 1))
		waitForConfigEvent(t, "ConfigInvalid", "defaults.profile")
		// A Workload created now still converges on the last valid config.
		testenv.Create(t, env.Client, workload(ns, "during-bad-config"))
		if p := planOf(t, ns, "during-bad-config"); p.Spec.BackendID != "k8s-web" {
			t.Fatalf("backend %s", p.Spec.BackendID)
		}
	})

	t.Run("a config change requeues every Workload it affects", func(t *testing.T) {
		// A newer version at the same priority wins.
		changed := withNewerBackend(baseConfig)
		applyConfig(t, changed)
		for _, name := range []string{"early", "during-bad-config"} {
			eventually(t, name+" moves to the new backend", func() error {
				if p := planOf(t, ns, name); p.Spec.BackendID != "k8s-web-v2" || p.Spec.ConfigRevision != orchconfig.Revision([]byte(changed)) {
					return fmt.Errorf("backend %s from config %s", p.Spec.BackendID, p.Spec.ConfigRevision)
				}
				return nil
			})
		}

		// A revision that renders the plans the same (a comment) writes nothing: the plans
		// keep the revision they were written from.
		before := planOf(t, ns, "early")
		loads := testutil.ToFloat64(configsource.ReloadsTotal.WithLabelValues("configmap", "success"))
		commented := changed + "# a comment only\n"
		applyConfig(t, commented)
		eventually(t, "the commented revision loaded", func() error {
			if n := testutil.ToFloat64(configsource.ReloadsTotal.WithLabelValues("configmap", "success")); n <= loads {
				return fmt.Errorf("%v loads", n)
			}
			return nil
		})
		requestReconcile(t, ns, "early")
		if p := planOf(t, ns, "early"); p.Generation != before.Generation || p.Spec.ConfigRevision != orchconfig.Revision([]byte(changed)) {
			t.Fatalf("a revision that renders the plan the same rewrote it: generation %d → %d, config %s", before.Generation, p.Generation, p.Spec.ConfigRevision)
		}
		applyConfig(t, baseConfig)
		eventually(t, "back on the base config", func() error {
			if p := planOf(t, ns, "early"); p.Spec.BackendID != "k8s-web" {
				return fmt.Errorf("backend %s", p.Spec.BackendID)
			}
			return nil
		})
	})
}

func waitForConfigEvent(t *testing.T, reason, contains string) {
	t.Helper()
	eventually(t, "a "+reason+" event on the ConfigMap", func() error {
		var events eventsv1.EventList
		if err := env.Client.List(ctx, &events, client.InNamespace("score-system")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "ConfigMap" && e.Reason == reason && strings.Contains(e.Note, contains) {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
}
