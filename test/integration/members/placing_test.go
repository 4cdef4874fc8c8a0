package members

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/members"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv/controllerproc"
)

// Placing into a namespace on a member sends no create that can be refused, whoever placed
// it before: many workers at once create the namespace and the identity's RoleBinding once; a
// namespace another process placed (the provisioner deployed apart from the runtime, or this
// process before a restart) is found granted, with nothing created, and so again after a
// failed request there; one whose placing was killed between the namespace and the RoleBinding
// gets the RoleBinding. The member API server's audit log counts the identity's writes.
func TestPlacingSendsNoRefusedCreate(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.log")
	member, err := testenv.StartAudited(audit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.Stop() })
	const name = "placing"
	testenv.RegisterMember(t, env.Client, member.Config, registration.Registration{Name: name, Namespace: controlPlane, Labels: map[string]string{"env": "test"}})
	t.Cleanup(func() { _ = env.Client.Delete(ctx, registrationOf(t, name)) })
	var mem *members.Member
	testenv.Eventually(t, time.Minute, "the runtime's pool reaches the member", func() error {
		mem, err = pool.Get(name)
		return err
	})
	// creates are the identity's creates of namespaces and RoleBindings for namespace ns, by
	// answer.
	creates := func(ns string) map[string]int {
		out := map[string]int{}
		for _, e := range controllerproc.ReadAudit(t, audit) {
			ref := e.ObjectRef
			if e.Verb != "create" || !strings.HasSuffix(e.User.Username, ":"+registration.MemberServiceAccount) ||
				!(ref.Resource == "namespaces" && ref.Name == ns || ref.Resource == "rolebindings" && ref.Namespace == ns) {
				continue
			}
			out[fmt.Sprintf("%s %d", ref.Resource, e.ResponseStatus.Code)]++
		}
		return out
	}
	want := func(t *testing.T, ns string, want map[string]int) {
		t.Helper()
		if got := creates(ns); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("the identity's creates for %s: %v, want %v", ns, got, want)
		}
	}
	// placedBy makes ns on the member as a placing would: the namespace, and the RoleBinding
	// when granted.
	placedBy := func(ns string, granted bool) {
		testenv.Create(t, member.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{clusters.LabelPlaced: "true"}}})
		if granted {
			testenv.Create(t, member.Client, registration.NamespaceBinding(ns))
		}
	}

	t.Run("many workers at once", func(t *testing.T) {
		testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "placing-new", Labels: map[string]string{podSecurity: "baseline"}}})
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = mem.EnsureNamespace(ctx, "placing-new") }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		want(t, "placing-new", map[string]int{"namespaces 201": 1, "rolebindings 201": 1})
		ns := &corev1.Namespace{}
		if err := member.Client.Get(ctx, client.ObjectKey{Name: "placing-new"}, ns); err != nil || ns.Labels[podSecurity] != "baseline" {
			t.Fatalf("the namespace's Pod Security labels: %v, %v", ns.Labels, err)
		}
	})

	t.Run("placed by another process, then a failure there", func(t *testing.T) {
		placedBy("placing-other", true)
		if err := mem.EnsureNamespace(ctx, "placing-other"); err != nil {
			t.Fatal(err)
		}
		pool.Failed(mem, "placing-other", errors.New("a request failed"))
		if err := mem.EnsureNamespace(ctx, "placing-other"); err != nil {
			t.Fatal(err)
		}
		want(t, "placing-other", map[string]int{})
	})

	t.Run("a placing killed before the RoleBinding", func(t *testing.T) {
		placedBy("placing-half", false)
		if err := mem.EnsureNamespace(ctx, "placing-half"); err != nil {
			t.Fatal(err)
		}
		want(t, "placing-half", map[string]int{"rolebindings 201": 1})
	})
}
