package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// A preview environment of the newcomer's app (two services, postgres, a shared amqp, dns and
// a route), as a user makes one with scorectl on the simulated cluster: up brings it Ready in a
// namespace of its own with dependencies of its own, Delete whatever the config says; list and
// why show it as a preview; down has the control plane delete its Workloads, their
// dependencies and the namespace (the real namespace controller finishes it). A preview given
// a short lifetime is deleted by the control plane with no command at all.
func TestPreviewEnvironment(t *testing.T) {
	run := scorectl(t)
	of := "e2e-preview"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: of, Labels: map[string]string{"team": "shop"}}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"web.yaml": newcomerWeb, "worker.yaml": newcomerWorker} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ns := scorev1b1.PreviewNamespacePrefix + "pr-1"
	testenv.PreviewPolicySettled(t, c) // devenv.Install put it there: previews made now are trusted
	me := testenv.Username(t, c)

	out, err := run("preview", "up", "pr-1", "-f", dir, "-n", of, "--ttl", "2h", "--timeout", "4m")
	if err != nil || !strings.Contains(out, "preview pr-1 is up in") || !regexp.MustCompile(`(?m)^web +True +Succeeded +http://web-dns\.`+ns+`\.dev\.local/$`).MatchString(out) {
		t.Fatalf("preview up: %v\n%s", err, out)
	}
	t.Log(lastLine(out))
	t.Run("the preview's namespace is labelled as one, with the previewed namespace's labels", func(t *testing.T) {
		n := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			t.Fatal(err)
		}
		if n.Labels[scorev1b1.LabelPreview] != "pr-1" || n.Labels[scorev1b1.LabelPreviewOf] != of || n.Labels["team"] != "shop" {
			t.Errorf("labels %v", n.Labels)
		}
		if maker := n.Annotations[scorev1b1.AnnotationPreviewMaker]; maker != me {
			t.Errorf("maker %q, want %q", maker, me)
		}
	})
	t.Run("its dependencies are its own, and Delete", func(t *testing.T) {
		var claims scorev1b1.ResourceClaimList
		if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(claims.Items) != 5 { // web: db, queue, dns, route; worker: queue
			t.Errorf("%d claims, want 5", len(claims.Items))
		}
		for _, cl := range claims.Items {
			if cl.Spec.DeprovisionPolicy != scorev1b1.DeprovisionDelete {
				t.Errorf("claim %s: policy %s, want Delete", cl.Name, cl.Spec.DeprovisionPolicy)
			}
			if cl.Status.InstanceNamespace != "" && cl.Status.InstanceNamespace != ns {
				t.Errorf("claim %s: instance in %s, want the preview's own", cl.Name, cl.Status.InstanceNamespace)
			}
		}
	})
	t.Run("list and why show it as a preview", func(t *testing.T) {
		out, err := run("preview", "list", "--of", of)
		if err != nil || !regexp.MustCompile(`(?m)^pr-1 +`+ns+` +`+of+` +`+regexp.QuoteMeta(me)+` +\S+ +1[12]\dm +2/2 +Ready$`).MatchString(out) {
			t.Errorf("preview list: %v\n%s", err, out)
		}
		out, err = run("why", "web", "-n", ns)
		if err != nil || !strings.Contains(out, "Preview environment: preview pr-1 of namespace "+of+", made by "+me+", expires ") {
			t.Errorf("why: %v\n%s", err, out)
		}
	})

	t.Run("up again updates it and keeps its expiry", func(t *testing.T) {
		expiry := func() string {
			n := &corev1.Namespace{}
			if err := c.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
				t.Fatal(err)
			}
			return n.Annotations[scorev1b1.AnnotationPreviewExpires]
		}
		before := expiry()
		if out, err := run("preview", "up", "pr-1", "-f", dir, "-n", of, "--timeout", "2m"); err != nil {
			t.Fatalf("preview up again: %v\n%s", err, out)
		}
		if after := expiry(); after != before || after == "" {
			t.Errorf("the expiry went from %q to %q", before, after)
		}
	})

	out, err = run("preview", "down", "pr-1", "--timeout", "4m")
	if err != nil || !strings.Contains(out, "preview pr-1 is gone in") {
		t.Fatalf("preview down: %v\n%s", err, out)
	}
	t.Log(lastLine(out))
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the preview's namespace is still there: %v", err)
	}

	t.Run("an expired preview is deleted by the control plane", func(t *testing.T) {
		hello := filepath.Join(testenv.RepoRoot(), "examples", "hello", "score.yaml")
		if out, err := run("preview", "up", "pr-2", "-f", hello, "-n", of, "--ttl", "20s", "--no-wait"); err != nil {
			t.Fatalf("preview up: %v\n%s", err, out)
		}
		testenv.Eventually(t, 3*time.Minute, "the expired preview gone", func() error {
			err := c.Get(ctx, client.ObjectKey{Name: scorev1b1.PreviewNamespacePrefix + "pr-2"}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		})
	})
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
