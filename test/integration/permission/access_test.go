package permission

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// The identities of the access table. Users get the user roles through RoleBindings in
// their team's namespace; each controller's service account is bound, cluster-wide, to the
// role generated from its markers, exactly as devenv.Install (make dev) binds it.
const (
	editor         = "editor"
	viewer         = "viewer"
	orchestratorSA = "orchestrator"
	provisionerSA  = "provisioner"
	runtimeSA      = "runtime"
	rolloutSA      = "rollout"

	teamNamespace = "team-a"
	otherTeam     = "team-b"
)

var identities = map[string]rest.ImpersonationConfig{
	editor:         {UserName: "alice", Groups: []string{"system:authenticated"}},
	viewer:         {UserName: "bob", Groups: []string{"system:authenticated"}},
	orchestratorSA: serviceAccount("score-orchestrator"),
	provisionerSA:  serviceAccount("score-provisioner"),
	runtimeSA:      serviceAccount("score-runtime"),
	rolloutSA:      serviceAccount("score-rollout"),
}

// actingAs is a client of env's API server that acts as who, one of identities.
func actingAs(t *testing.T, env *testenv.Env, who string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = identities[who]
	cl, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func serviceAccount(name string) rest.ImpersonationConfig {
	ns := devenv.SystemNamespace
	return rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
}

// access is one row: may who do verb on resource (kubectl's resource.group/subresource
// notation) in the team's namespace, or in ns when set.
type access struct {
	who, verb, resource string
	allowed             bool
	ns                  string
}

func (a access) String() string {
	ns := a.ns
	if ns == "" {
		ns = teamNamespace
	}
	word := "cannot"
	if a.allowed {
		word = "can"
	}
	return fmt.Sprintf("%s %s %s %s in %s", a.who, word, a.verb, a.resource, ns)
}

// attributes parses "resource.group/subresource".
func (a access) attributes() *authorizationv1.ResourceAttributes {
	ns := a.ns
	if ns == "" {
		ns = teamNamespace
	}
	res, sub, _ := strings.Cut(a.resource, "/")
	res, group, _ := strings.Cut(res, ".")
	return &authorizationv1.ResourceAttributes{Namespace: ns, Verb: a.verb, Group: group, Resource: res, Subresource: sub}
}

var (
	everyone    = []string{editor, viewer, orchestratorSA, provisionerSA, runtimeSA, rolloutSA}
	writeVerbs  = []string{"create", "update", "patch", "delete"}
	statusWrite = []string{"update", "patch"}
)

// accessTable is the RBAC contract: who may read and write what.
func accessTable() []access {
	rows := []access{
		// Users work on Workloads, in their namespace only, and read their events.
		{who: editor, verb: "create", resource: "workloads.score.dev", allowed: true},
		{who: editor, verb: "update", resource: "workloads.score.dev", allowed: true},
		{who: editor, verb: "patch", resource: "workloads.score.dev", allowed: true},
		{who: editor, verb: "delete", resource: "workloads.score.dev", allowed: true},
		{who: editor, verb: "watch", resource: "workloads.score.dev", allowed: true},
		{who: editor, verb: "create", resource: "workloads.score.dev", ns: otherTeam},
		{who: editor, verb: "get", resource: "workloads.score.dev", ns: otherTeam},
		{who: editor, verb: "list", resource: "events", allowed: true},
		{who: editor, verb: "list", resource: "events.events.k8s.io", allowed: true},
		{who: editor, verb: "create", resource: "events"},
		{who: editor, verb: "get", resource: "configmaps"},
		{who: editor, verb: "create", resource: "deployments.apps"},
		{who: viewer, verb: "get", resource: "workloads.score.dev", allowed: true},
		{who: viewer, verb: "list", resource: "workloads.score.dev", allowed: true},
		{who: viewer, verb: "watch", resource: "workloads.score.dev", allowed: true},
		{who: viewer, verb: "create", resource: "workloads.score.dev"},
		{who: viewer, verb: "patch", resource: "workloads.score.dev"},
		{who: viewer, verb: "delete", resource: "workloads.score.dev"},
		{who: viewer, verb: "list", resource: "events", allowed: true},
		{who: viewer, verb: "watch", resource: "events.events.k8s.io", allowed: true},
		{who: viewer, verb: "list", resource: "workloads.score.dev", ns: otherTeam},
		// Users ask the control plane for a Workload's trace (scorectl why without the config):
		// they create, read and delete the request, in their namespace only, and never write
		// its answer.
		{who: editor, verb: "create", resource: "workloadtraces.score.dev", allowed: true},
		{who: editor, verb: "get", resource: "workloadtraces.score.dev", allowed: true},
		{who: editor, verb: "watch", resource: "workloadtraces.score.dev", allowed: true},
		{who: editor, verb: "delete", resource: "workloadtraces.score.dev", allowed: true},
		{who: editor, verb: "update", resource: "workloadtraces.score.dev"},
		{who: editor, verb: "create", resource: "workloadtraces.score.dev", ns: otherTeam},
		{who: editor, verb: "get", resource: "workloadtraces.score.dev", ns: otherTeam},
		{who: viewer, verb: "create", resource: "workloadtraces.score.dev"}, // view never creates: asking is the editor's
		{who: viewer, verb: "list", resource: "workloadtraces.score.dev", allowed: true},
		{who: viewer, verb: "patch", resource: "workloadtraces.score.dev"},
		{who: viewer, verb: "create", resource: "workloadtraces.score.dev", ns: otherTeam},

		// The orchestrator writes Workload status and the internal kinds' specs, never their
		// status, and touches nothing the runtime or provisioner create.
		{who: orchestratorSA, verb: "patch", resource: "workloads.score.dev", allowed: true},
		{who: orchestratorSA, verb: "update", resource: "workloads.score.dev/finalizers", allowed: true},
		{who: orchestratorSA, verb: "create", resource: "workloads.score.dev"},
		{who: orchestratorSA, verb: "delete", resource: "workloads.score.dev"},
		{who: orchestratorSA, verb: "create", resource: "resourceclaims.score.dev", allowed: true},
		{who: orchestratorSA, verb: "delete", resource: "resourceclaims.score.dev", allowed: true},
		{who: orchestratorSA, verb: "create", resource: "workloadplans.score.dev", allowed: true},
		{who: orchestratorSA, verb: "patch", resource: "workloadexposures.score.dev", allowed: true},
		{who: orchestratorSA, verb: "get", resource: "configmaps", allowed: true},
		{who: orchestratorSA, verb: "create", resource: "configmaps"},
		{who: orchestratorSA, verb: "create", resource: "deployments.apps"},
		{who: orchestratorSA, verb: "create", resource: "services"},
		{who: orchestratorSA, verb: "create", resource: "events.events.k8s.io", allowed: true},
		// It follows the fleet's rollouts, which it never writes.
		{who: orchestratorSA, verb: "list", resource: "configrollouts.score.dev", ns: devenv.SystemNamespace, allowed: true},
		{who: orchestratorSA, verb: "create", resource: "configrollouts.score.dev", ns: devenv.SystemNamespace},
		{who: orchestratorSA, verb: "patch", resource: "configrollouts.score.dev", ns: devenv.SystemNamespace},
		// It answers the users' trace requests and removes them; it never makes one.
		{who: orchestratorSA, verb: "watch", resource: "workloadtraces.score.dev", allowed: true},
		{who: orchestratorSA, verb: "delete", resource: "workloadtraces.score.dev", allowed: true},
		{who: orchestratorSA, verb: "create", resource: "workloadtraces.score.dev"},
		{who: orchestratorSA, verb: "update", resource: "workloadtraces.score.dev"},
		{who: orchestratorSA, verb: "patch", resource: "workloadtraces.score.dev/status", allowed: true},
		{who: orchestratorSA, verb: "update", resource: "workloadtraces.score.dev/status"},
		{who: editor, verb: "patch", resource: "workloadtraces.score.dev/status"},
		{who: viewer, verb: "update", resource: "workloadtraces.score.dev/status"},
		{who: runtimeSA, verb: "patch", resource: "workloadtraces.score.dev/status"},

		// The provisioner reads Workloads and claims, writes claim status and what it
		// provisions.
		{who: provisionerSA, verb: "get", resource: "workloads.score.dev", allowed: true},
		{who: provisionerSA, verb: "create", resource: "workloads.score.dev"},
		{who: provisionerSA, verb: "update", resource: "workloads.score.dev"},
		{who: provisionerSA, verb: "patch", resource: "workloads.score.dev"},
		{who: provisionerSA, verb: "create", resource: "resourceclaims.score.dev"},
		{who: provisionerSA, verb: "delete", resource: "resourceclaims.score.dev"},
		{who: provisionerSA, verb: "patch", resource: "resourceclaims.score.dev", allowed: true},
		// It reads plans (which hold no secret) to know when a moved Workload has left a
		// cluster, and writes none.
		{who: provisionerSA, verb: "get", resource: "workloadplans.score.dev", allowed: true},
		{who: provisionerSA, verb: "patch", resource: "workloadplans.score.dev"},
		{who: provisionerSA, verb: "patch", resource: "workloadplans.score.dev/status"},
		{who: provisionerSA, verb: "create", resource: "statefulsets.apps", allowed: true},
		{who: provisionerSA, verb: "create", resource: "persistentvolumeclaims", allowed: true},

		// The runtime reads plans and exposures, writes their status and what it deploys; it
		// never sees Workloads.
		{who: runtimeSA, verb: "get", resource: "workloads.score.dev"},
		{who: runtimeSA, verb: "update", resource: "workloads.score.dev"},
		{who: runtimeSA, verb: "get", resource: "workloadplans.score.dev", allowed: true},
		{who: runtimeSA, verb: "create", resource: "workloadplans.score.dev"},
		// Patch, for its finalizer on plans that applied cluster-scoped objects (allowedKinds); not update.
		{who: runtimeSA, verb: "patch", resource: "workloadplans.score.dev", allowed: true},
		{who: runtimeSA, verb: "update", resource: "workloadplans.score.dev"},
		{who: runtimeSA, verb: "update", resource: "workloadplans.score.dev/finalizers", allowed: true},
		{who: runtimeSA, verb: "get", resource: "resourceclaims.score.dev"},
		{who: runtimeSA, verb: "create", resource: "deployments.apps", allowed: true},
		{who: runtimeSA, verb: "create", resource: "jobs.batch", allowed: true},
		{who: runtimeSA, verb: "create", resource: "ingresses.networking.k8s.io", allowed: true},
		{who: runtimeSA, verb: "create", resource: "persistentvolumeclaims"},
		{who: runtimeSA, verb: "list", resource: "endpointslices.discovery.k8s.io", allowed: true},
		{who: runtimeSA, verb: "get", resource: "workloadtraces.score.dev"},
		{who: provisionerSA, verb: "get", resource: "workloadtraces.score.dev"},
		{who: rolloutSA, verb: "get", resource: "workloadtraces.score.dev"},

		// The rollout creates rollouts and reads the fleet (Workloads, plans, claims' revisions,
		// namespaces' labels); it writes nothing of a Workload's.
		{who: rolloutSA, verb: "create", resource: "configrollouts.score.dev", ns: devenv.SystemNamespace, allowed: true},
		{who: rolloutSA, verb: "watch", resource: "workloads.score.dev", allowed: true},
		{who: rolloutSA, verb: "get", resource: "workloadplans.score.dev", allowed: true},
		{who: rolloutSA, verb: "list", resource: "resourceclaims.score.dev", allowed: true},
		{who: rolloutSA, verb: "list", resource: "namespaces", allowed: true},
		{who: rolloutSA, verb: "patch", resource: "workloads.score.dev"},
		{who: rolloutSA, verb: "create", resource: "resourceclaims.score.dev"},
		{who: rolloutSA, verb: "patch", resource: "workloadplans.score.dev"},
		{who: rolloutSA, verb: "create", resource: "deployments.apps"},
		// The admitted revisions, in the control plane's namespace only.
		{who: rolloutSA, verb: "create", resource: "configmaps", ns: devenv.SystemNamespace, allowed: true},
		{who: rolloutSA, verb: "create", resource: "configmaps"},
	}

	// Each status has exactly one writer (the contract's table).
	statusWriter := map[string]string{
		"workloads.score.dev/status":         orchestratorSA,
		"resourceclaims.score.dev/status":    provisionerSA,
		"workloadplans.score.dev/status":     runtimeSA,
		"workloadexposures.score.dev/status": runtimeSA,
		"configrollouts.score.dev/status":    rolloutSA,
	}
	for resource, writer := range statusWriter {
		for _, who := range everyone {
			for _, verb := range statusWrite {
				rows = append(rows, access{who: who, verb: verb, resource: resource, allowed: who == writer})
			}
		}
	}
	// Nobody but the provisioner and the runtime writes Secrets; users never read them.
	for _, who := range everyone {
		for _, verb := range writeVerbs {
			rows = append(rows, access{who: who, verb: verb, resource: "secrets", allowed: who == provisionerSA || who == runtimeSA})
		}
	}
	for _, who := range []string{editor, viewer, orchestratorSA, rolloutSA} {
		for _, verb := range []string{"get", "list", "watch"} {
			rows = append(rows, access{who: who, verb: verb, resource: "secrets"})
		}
	}
	// Leader election: each controller keeps its lease in score-system and may touch no other
	// namespace's leases (kube-system's are the cluster's own controllers').
	for _, who := range everyone {
		for _, verb := range []string{"get", "create", "update"} {
			controller := who != editor && who != viewer
			rows = append(rows, access{who: who, verb: verb, resource: "leases.coordination.k8s.io", ns: devenv.SystemNamespace, allowed: controller})
			rows = append(rows, access{who: who, verb: verb, resource: "leases.coordination.k8s.io", ns: "kube-system"})
		}
		rows = append(rows, access{who: who, verb: "delete", resource: "leases.coordination.k8s.io", ns: devenv.SystemNamespace})
		// The leader's Event (core events, recorded by client-go's leader election).
		rows = append(rows, access{who: who, verb: "create", resource: "events", ns: devenv.SystemNamespace, allowed: who != editor && who != viewer})
	}
	// Users see Workloads only: none of the internal kinds, not even to read.
	for _, who := range []string{editor, viewer} {
		for _, kind := range []string{"resourceclaims", "workloadplans", "workloadexposures"} {
			for _, verb := range []string{"get", "list", "create", "patch"} {
				rows = append(rows, access{who: who, verb: verb, resource: kind + ".score.dev"})
			}
		}
	}
	return rows
}

// TestAccess installs what make dev installs (the generated controller roles bound to their
// service accounts, and the user roles), binds the user roles in a team's namespace, and
// asks the API server's authorizer about every row of the access table. A few rows are then
// tried as real requests under impersonation, to show the reviews tell the truth.
func TestAccess(t *testing.T) {
	env := testenv.StartForTest(t)
	ctx := context.Background()
	c := env.Client
	if _, err := devenv.Install(ctx, c, os.DirFS(testenv.RepoRoot())); err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherTeam}},
		userBinding("alice", "score-workload-editor"),
		userBinding("bob", "score-workload-viewer"),
	)

	rows := accessTable()
	for _, row := range rows {
		t.Run(row.String(), func(t *testing.T) {
			id := identities[row.who]
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: id.UserName, Groups: id.Groups, ResourceAttributes: row.attributes(),
			}}
			testenv.Create(t, c, review)
			if review.Status.Allowed != row.allowed {
				t.Errorf("allowed=%v (%s)", review.Status.Allowed, review.Status.Reason)
			}
		})
	}
	t.Logf("%d access rows", len(rows))

	t.Run("real requests agree", func(t *testing.T) {
		mustBe := func(what string, err error, forbidden bool) {
			t.Helper()
			if forbidden != apierrors.IsForbidden(err) || (!forbidden && err != nil) {
				t.Errorf("%s: forbidden=%v, got %v", what, forbidden, err)
			}
		}
		w := &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: teamNamespace},
			Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"main": {Image: "nginx"}}}}
		mustBe("the editor creates a Workload", actingAs(t, env, editor).Create(ctx, w), false)
		w.Status.Endpoint = ptr.To("http://web.example")
		mustBe("the editor writes its status", actingAs(t, env, editor).Status().Update(ctx, w), true)
		mustBe("the orchestrator writes its status", actingAs(t, env, orchestratorSA).Status().Update(ctx, w), false)
		mustBe("the viewer reads it", actingAs(t, env, viewer).Get(ctx, client.ObjectKeyFromObject(w), &scorev1b1.Workload{}), false)
		mustBe("the viewer deletes it", actingAs(t, env, viewer).Delete(ctx, w), true)
		mustBe("the viewer lists Secrets", actingAs(t, env, viewer).List(ctx, &corev1.SecretList{}, client.InNamespace(teamNamespace)), true)
		other := w.DeepCopy()
		other.Namespace, other.ResourceVersion = otherTeam, ""
		mustBe("the editor creates a Workload in another team's namespace", actingAs(t, env, editor).Create(ctx, other), true)

		trace := &scorev1b1.WorkloadTrace{ObjectMeta: metav1.ObjectMeta{Name: "web-why", Namespace: teamNamespace}, Spec: scorev1b1.WorkloadTraceSpec{Workload: "web"}}
		mustBe("the editor asks for a trace", actingAs(t, env, editor).Create(ctx, trace), false)
		trace.Status.Trace = &scorev1b1.Trace{Generation: 1, Profile: scorev1b1.TraceProfile{Name: "forged"}}
		mustBe("the editor writes its answer", actingAs(t, env, editor).Status().Update(ctx, trace), true)
		answer := client.MergeFrom(&scorev1b1.WorkloadTrace{})
		mustBe("the orchestrator writes its answer", actingAs(t, env, orchestratorSA).Status().Patch(ctx, trace, answer), false)

		claim := &scorev1b1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "web-db", Namespace: teamNamespace},
			Spec: scorev1b1.ResourceClaimSpec{WorkloadRef: scorev1b1.LocalWorkloadRef{Name: "web", UID: string(w.UID)}, Key: "db", Type: "postgres"}}
		mustBe("the orchestrator creates a claim", actingAs(t, env, orchestratorSA).Create(ctx, claim), false)
		claim.Status.Phase = scorev1b1.ClaimPhasePending
		mustBe("the orchestrator writes the claim's status", actingAs(t, env, orchestratorSA).Status().Update(ctx, claim), true)
		mustBe("the runtime writes the claim's status", actingAs(t, env, runtimeSA).Status().Update(ctx, claim), true)
		mustBe("the provisioner writes the claim's status", actingAs(t, env, provisionerSA).Status().Update(ctx, claim), false)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-db", Namespace: teamNamespace}}
		mustBe("the orchestrator creates a Secret", actingAs(t, env, orchestratorSA).Create(ctx, secret), true)
		mustBe("the provisioner creates a Secret", actingAs(t, env, provisionerSA).Create(ctx, secret), false)
	})

	// Every identity of the table appears in it, allowed and denied.
	for _, who := range everyone {
		if !slices.ContainsFunc(rows, func(r access) bool { return r.who == who && r.allowed }) ||
			!slices.ContainsFunc(rows, func(r access) bool { return r.who == who && !r.allowed }) {
			t.Errorf("the table lacks allowed or denied rows for %s", who)
		}
	}
}

func userBinding(user, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: user + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
}
