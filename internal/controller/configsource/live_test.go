package configsource_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// On a real API server, with a registry that refuses anonymous pulls: the config named by the
// ConfigMap's ociRef is fetched with the pull secret's credentials and loaded; a changed
// reference is loaded live; a reference to an invalid document, or one that cannot be
// fetched, never replaces the last valid config and says why on the ConfigMap; a pull secret
// replaced with the right credentials is used while the fetch is retried, no restart.
func TestConfigByOCIReference(t *testing.T) {
	env := testenv.StartForTest(t)
	c := env.Client
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := testenv.StartRegistry(t, "platform", "pull-password-1")
	sample, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	publish := func(doc []byte) string {
		return reg.Push(t, "platform/orchestrator-config", configsource.ConfigArtifactType, configsource.ConfigLayerMediaType, doc)
	}
	first, second := publish(sample), publish(append(sample, "# second revision\n"...))
	invalid := publish([]byte("apiVersion: score.dev/v1b1\nkind: OrchestratorConfig\nprofiles: []\n"))
	digest := func(ref string) string { _, d, _ := strings.Cut(ref, "@"); return d }

	const ns = "score-system"
	pull := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry-pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfig("platform", "pull-password-1")}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orchestrator-config"}, Data: map[string]string{configsource.OCIRefKey: first}}
	testenv.Create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, pull, cm)

	mgr, err := ctrl.NewManager(env.Config, testenv.ManagerOptions())
	if err != nil {
		t.Fatal(err)
	}
	opts := configsource.DefaultOptions()
	opts.OCIPlainHTTP, opts.OCICacheDir, opts.OCIPullSecret = true, t.TempDir(), pull.Name
	opts.FetchRetry = 200 * time.Millisecond
	store, err := configsource.Setup(mgr, opts, "test")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	loaded := func(ref string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, "the config of "+ref+" is loaded", func() error {
			if l, ok := store.Get(); !ok || l.Source != "oci/"+digest(ref) {
				return fmt.Errorf("revision %v", l)
			}
			return nil
		})
	}
	setRef := func(ref string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		cm.Data[configsource.OCIRefKey] = ref
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	// event waits for a Warning with reason and a message holding want, then checks the
	// store still holds keep's config.
	event := func(reason, want, keep string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, "a "+reason+" event saying "+want, func() error {
			var events corev1.EventList
			if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Reason == reason && strings.Contains(e.Message, want) {
					if strings.Contains(e.Message, "pull-password") {
						t.Fatalf("the event holds the password: %s", e.Message)
					}
					return nil
				}
			}
			return fmt.Errorf("%d events, none", len(events.Items))
		})
		if l, _ := store.Get(); l.Source != "oci/"+digest(keep) {
			t.Fatalf("the config is now from %s, want %s kept", l.Source, digest(keep))
		}
	}

	loaded(first)
	setRef(second)
	loaded(second)

	setRef(invalid)
	event("ConfigInvalid", "profiles", second)

	missing := reg.Host + "/platform/orchestrator-config@sha256:" + strings.Repeat("0", 64)
	failures := func() float64 {
		return promtestutil.ToFloat64(configsource.ReloadsTotal.WithLabelValues("oci", "failure"))
	}
	before := failures()
	setRef(missing)
	event("ConfigFetchFailed", "could not be fetched", second)
	// Tried again on a fixed period (here 200 ms), not a backoff growing to minutes, so a source
	// that recovers is read again soon; one event for the error, not one per try.
	testenv.Eventually(t, 10*time.Second, "five more tries", func() error {
		if n := failures() - before; n < 5 {
			return fmt.Errorf("%v tries", n)
		}
		return nil
	})
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, e := range events.Items {
		if e.Reason == "ConfigFetchFailed" && strings.Contains(e.Message, strings.Repeat("0", 64)) {
			said += max(1, int(e.Count))
			if e.Series != nil {
				said += int(e.Series.Count) - 1
			}
		}
	}
	if said != 1 {
		t.Fatalf("the same fetch error said %d times, want once", said)
	}

	// The config moves to a registry whose credentials the Secret does not hold yet: the fetch
	// fails, naming the Secret, until the Secret is replaced with them, and then succeeds on a
	// retry without the ConfigMap changing.
	rotated := testenv.StartRegistry(t, "platform", "pull-password-2")
	third := rotated.Push(t, "platform/orchestrator-config", configsource.ConfigArtifactType, configsource.ConfigLayerMediaType, append(sample, "# third\n"...))
	setRef(third)
	event("ConfigFetchFailed", "refused the pull (401 Unauthorized) with the credentials of Secret score-system/registry-pull", second)
	pull.Data[corev1.DockerConfigJsonKey] = rotated.DockerConfig("platform", "pull-password-2")
	if err := c.Update(ctx, pull); err != nil {
		t.Fatal(err)
	}
	loaded(third)
}
