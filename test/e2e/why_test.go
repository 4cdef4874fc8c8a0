package e2e

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/dashboard"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// whyCase is one Workload held by one reason, and what scorectl why and the dashboard's trace
// must say of it.
type whyCase struct {
	reason scorev1b1.Reason
	// ns is the case's own namespace; prepare sets it up (a LimitRange, a quota, a policy)
	// before the Workloads are created, provoke acts once the first is created.
	ns      string
	prepare func(t *testing.T, ns string)
	// first, when set, is created and Ready before workload, the one the trace is of.
	first, workload *scorev1b1.Workload
	provoke         func(t *testing.T, ns string)
	// ready is the Ready condition's status to wait for (False unless said).
	ready metav1.ConditionStatus
	// lines are regular expressions, each matching a line of the trace, in this order.
	lines []string
}

// For every reason in the closed set, on real objects of a simulated cluster (a real scheduler,
// controller-manager and volume controller; kwok runs the pods it may schedule), scorectl why
// and the dashboard's trace name the object(s) in the way in their own words: a StatefulSet
// whose pod a LimitRange made unschedulable, a volume claim no volume fits, a build Job that
// failed, the Secret a provisioner's outputs need, an output no provisioner publishes, a route
// whose Gateway does not exist, an Ingress no controller serves, an admission policy's and a
// quota's refusal, an object another Workload holds. A user without the right to read pods
// sees the trace say so.
func TestWhyNamesWhatIsInTheWay(t *testing.T) {
	bin, err := testenv.BuildCommand(t.TempDir(), "scorectl")
	if err != nil {
		t.Fatal(err)
	}
	dash := dashboardOf(t, cfg)
	unschedulable := func(t *testing.T, ns string) { create(t, noRoomFor(ns)) }
	port := testenv.WithPort("http", 80)
	cases := []whyCase{{
		reason: scorev1b1.ReasonSpecInvalid, ns: "e2e-why-spec",
		workload: testenv.Workload("e2e-why-spec", "web", testenv.WithVar("NAME", "${metadata.nosuch}")),
		lines: []string{`^Blocking: SpecInvalid — `, `^In the way:$`,
			`^  Workload e2e-why-spec/web: its own specification \(generation 1\), as the message above says`},
	}, {
		reason: scorev1b1.ReasonRuntimeSelecting, ns: "e2e-why-selecting",
		workload: testenv.Workload("e2e-why-selecting", "web", testenv.WithAnnotation(scorev1b1.AnnotationRequirements, "gpu")),
		lines: []string{`^  ✗ k8s-web-v2 — .*"gpu"`, `^Blocking: RuntimeSelecting — `,
			`^  Orchestrator Config score-system/orchestrator-config \(revision \S+\): no backend of profile web-service fits this Workload`},
	}, {
		reason: scorev1b1.ReasonClaimPending, ns: "e2e-why-pending", prepare: unschedulable,
		workload: testenv.Workload("e2e-why-pending", "web", testenv.WithResource("db", "postgres")),
		lines: []string{`^Blocking: ClaimPending — `,
			`^  ResourceClaim e2e-why-pending/web-db-[-\w]+ \(dependency db\): Binding — Waiting for StatefulSet pg-[-\w]+ `,
			`^    StatefulSet e2e-why-pending/pg-[-\w]+: 0 of 1 replicas ready$`,
			`^      Pod e2e-why-pending/pg-[-\w]+-0: Pending — not scheduled \(Unschedulable\): 0/2 nodes are available: 2 Insufficient cpu\.`},
	}, {
		reason: scorev1b1.ReasonClaimPending, ns: "e2e-why-volume",
		workload: testenv.Workload("e2e-why-volume", "files", testenv.WithResource("data", "volume", testenv.ResourceParams(`{"size": "100Gi"}`))),
		lines: []string{`^Blocking: ClaimPending — `,
			`^  ResourceClaim e2e-why-volume/files-data-[-\w]+ \(dependency data\): Binding — Waiting for PersistentVolumeClaim vol-[-\w]+ `,
			`^    PersistentVolumeClaim e2e-why-volume/vol-[-\w]+: Pending — FailedBinding: no persistent volumes available for this claim and no storage class is set`},
	}, {
		reason: scorev1b1.ReasonClaimFailed, ns: "e2e-why-build", prepare: unschedulable,
		workload: &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e-why-build", Name: "shop"},
			Spec: scorev1b1.WorkloadSpec{Containers: map[string]scorev1b1.Container{"web": {Image: "."}},
				Resources: map[string]scorev1b1.Resource{"image": {Type: "image", Params: jsonObject(`{"context":"https://git.example.com/shop.git"}`)}}}},
		provoke: failBuilds,
		lines: []string{`^Blocking: ClaimFailed — `,
			`^  ResourceClaim e2e-why-build/shop-image-[-\w]+ \(dependency image\): Failed — Provisioner runnable://score-dev/image: `,
			`^    Job e2e-why-build/build-shop\S*: Failed \(BackoffLimitExceeded\): Job has reached the specified backoff limit; 0 active, 2 failed, 0 succeeded$`,
			`^      Pod e2e-why-build/build-shop\S*: Failed — container build terminated \(Error, exit code 1\): failed to solve: repository not found$`},
	}, {
		reason: scorev1b1.ReasonClaimFailed, ns: "e2e-why-secret",
		workload: testenv.Workload("e2e-why-secret", "web", testenv.WithResource("env", "environment")),
		lines: []string{`^Blocking: ClaimFailed — `,
			`^  ResourceClaim e2e-why-secret/web-env-[-\w]+ \(dependency env\): Failed — Provisioner template://score-dev/environment: output "API_TOKEN": secret score-environment referenced by an output: secrets "score-environment" not found\.$`},
	}, {
		reason: scorev1b1.ReasonProjectionError, ns: "e2e-why-output",
		workload: testenv.Workload("e2e-why-output", "web", testenv.WithResource("dns", "dns"), testenv.WithVar("HOST", "${resources.dns.hostname}")),
		lines: []string{`^Blocking: ProjectionError — `,
			`^  output resources\.dns\.hostname: ResourceClaim e2e-why-output/web-dns-[-\w]+ \(provisioner template://score-dev/dns\) has not published hostname; it publishes host, url$`},
	}, {
		reason: scorev1b1.ReasonRuntimeProvisioning, ns: "e2e-why-deploying", prepare: unschedulable,
		workload: testenv.Workload("e2e-why-deploying", "web", port),
		lines: []string{`^Blocking: RuntimeProvisioning — `,
			`^  Deployment e2e-why-deploying/web: 0 of 1 replicas ready, 1 updated, 0 available`,
			`^    Pod e2e-why-deploying/web-\S+: Pending — not scheduled \(Unschedulable\): 0/2 nodes are available: 2 Insufficient cpu\.`},
	}, {
		reason: scorev1b1.ReasonRuntimeDegraded, ns: "e2e-why-degraded", ready: metav1.ConditionTrue,
		workload: testenv.Workload("e2e-why-degraded", "web", port),
		provoke:  restartIntoNoRoom,
		lines: []string{`^Ready: The workload is ready with reduced capacity\.$`, `^In the way:$`,
			`^  Deployment e2e-why-degraded/web: 1 of 1 replicas ready, 1 updated, 1 available, 2 in all: a rollout is under way$`,
			`^    Pod e2e-why-degraded/web-\S+: Pending — not scheduled \(Unschedulable\): 0/2 nodes are available: 2 Insufficient cpu\.`},
	}, {
		reason: scorev1b1.ReasonNetworkUnavailable, ns: "e2e-why-route",
		workload: testenv.Workload("e2e-why-route", "web", port,
			testenv.WithResource("route", "route", testenv.ResourceParams(`{"host": "shop.e2e-why-route.dev.local", "port": "http"}`), func(r *scorev1b1.Resource) { r.Class = ptr.To(routeElsewhere) })),
		lines: []string{`^Blocking: NetworkUnavailable — `,
			`^  HTTPRoute e2e-why-route/route-[-\w]+: no parent has accepted it: no gateway controller has reported on it$`,
			`^    Gateway score-system/missing: does not exist$`},
	}, {
		reason: scorev1b1.ReasonNetworkUnavailable, ns: "e2e-why-ingress",
		workload: testenv.Workload("e2e-why-ingress", "web", port, testenv.WithAnnotation(scorev1b1.AnnotationRequirements, "public")),
		lines: []string{`^Blocking: NetworkUnavailable — `,
			`^  Ingress e2e-why-ingress/web: no address yet: no ingress controller of class score-dev has given it one$`,
			`^    IngressClass score-dev: does not exist: no ingress controller is installed for it$`},
	}, {
		reason: scorev1b1.ReasonPolicyViolation, ns: "e2e-why-policy", prepare: denyDeployments,
		workload: testenv.Workload("e2e-why-policy", "web", port),
		lines: []string{`^Blocking: PolicyViolation — `,
			`^  WorkloadPlan e2e-why-policy/web: Failed — The API server refused an object: .*deployments\.apps "web" is forbidden: ValidatingAdmissionPolicy 'e2e-why-no-deployments' with binding 'e2e-why-no-deployments' denied request: Deployments are not allowed in this namespace`},
	}, {
		reason: scorev1b1.ReasonQuotaExceeded, ns: "e2e-why-quota", prepare: noDeployments,
		workload: testenv.Workload("e2e-why-quota", "web", port),
		lines: []string{`^Blocking: QuotaExceeded — `,
			`^  WorkloadPlan e2e-why-quota/web: Failed — The API server refused an object: .*exceeded quota: deployments`,
			`^  ResourceQuota e2e-why-quota/deployments: count/deployments\.apps 0 of 0 used \(at its limit\)$`},
	}, {
		reason: scorev1b1.ReasonPermissionDenied, ns: "e2e-why-conflict",
		first:    testenv.Workload("e2e-why-conflict", "db", port, testenv.WithAnnotation(scorev1b1.AnnotationProfile, "stateful-service")),
		workload: testenv.Workload("e2e-why-conflict", "db-pods", port),
		lines: []string{`^Blocking: PermissionDenied — `,
			`^  WorkloadPlan e2e-why-conflict/db-pods: Failed — Service db-pods exists and belongs to workload db$`},
	}}
	addRouteToAMissingGateway(t)
	reasons := map[scorev1b1.Reason]bool{}
	for _, tc := range cases {
		reasons[tc.reason] = true
	}
	for _, r := range scorev1b1.Reasons {
		if !reasons[r] && r != scorev1b1.ReasonSucceeded {
			t.Errorf("no case holds a Workload by %s", r)
		}
	}

	// The Workloads go, and their namespaces with them, so that the tests after this one find a
	// cluster that settles.
	t.Cleanup(func() {
		for _, tc := range cases {
			for _, w := range []*scorev1b1.Workload{tc.first, tc.workload} {
				if w != nil {
					if err := c.Delete(ctx, w); err != nil && !apierrors.IsNotFound(err) {
						t.Error(err)
					}
				}
			}
		}
		for _, tc := range cases {
			for _, w := range []*scorev1b1.Workload{tc.first, tc.workload} {
				if w != nil {
					testenv.WaitGone(t, c, w)
				}
			}
			if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns}}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	})

	t.Run("each reason", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(string(tc.reason)+" in "+tc.ns, func(t *testing.T) {
				t.Parallel()
				create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tc.ns, Labels: map[string]string{"e2e-why": tc.ns}}})
				if tc.prepare != nil {
					tc.prepare(t, tc.ns)
				}
				if tc.first != nil {
					create(t, tc.first)
					waitWorkload(t, client.ObjectKeyFromObject(tc.first), "Ready first", nil)
				}
				w := tc.workload
				create(t, w)
				if tc.provoke != nil {
					tc.provoke(t, tc.ns)
				}
				ready := tc.ready
				if ready == "" {
					ready = metav1.ConditionFalse
				}
				testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("%s Ready=%s/%s", w.Name, ready, tc.reason), func() error {
					got := &scorev1b1.Workload{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
						return err
					}
					if r := testenv.Condition(got, scorev1b1.ConditionReady); r.Status != ready || r.Reason != string(tc.reason) {
						return fmt.Errorf("ready %s/%s: %s", r.Status, r.Reason, r.Message)
					}
					return nil
				})
				var out string
				testenv.Eventually(t, time.Minute, "scorectl why "+w.Name, func() error {
					b, err := exec.Command(bin, "why", w.Name, "-n", w.Namespace, "--kubeconfig", kubeconfig).CombinedOutput()
					if out = string(b); err != nil {
						return fmt.Errorf("%v: %s", err, out)
					}
					return linesInOrder(out, tc.lines)
				})
				t.Logf("scorectl why %s -n %s:\n%s", w.Name, w.Namespace, out)
				testenv.Eventually(t, 30*time.Second, "the dashboard's trace of "+w.Name, func() error {
					return linesInOrder(dash(t, w.Namespace, w.Name), tc.lines)
				})
			})
		}
	})

	t.Run("a user who may not read pods is told so", func(t *testing.T) {
		page := dashboardOf(t, asPodBlindUser(t))(t, "e2e-why-pending", "web")
		if err := linesInOrder(page, []string{
			`^  ResourceClaim e2e-why-pending/web-db-[-\w]+ \(dependency db\): Binding — `,
			`^    StatefulSet e2e-why-pending/pg-[-\w]+: 0 of 1 replicas ready$`,
			`^      its pods: not read: your rights do not let you list pods in e2e-why-pending$`,
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// linesInOrder checks that each pattern matches a line of text, in order.
func linesInOrder(text string, patterns []string) error {
	lines := strings.Split(text, "\n")
	at := 0
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		for at < len(lines) && !re.MatchString(lines[at]) {
			at++
		}
		if at == len(lines) {
			return fmt.Errorf("no line matches %s after the ones before it in:\n%s", p, text)
		}
		at++
	}
	return nil
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// noRoomFor is a LimitRange that asks 100 CPUs for every container that names none: more than
// a node of the simulated cluster has, so the scheduler places none of the namespace's pods.
func noRoomFor(ns string) *corev1.LimitRange {
	hundred := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-room"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: hundred, DefaultRequest: hundred}}}}
}

// restartIntoNoRoom waits for the Workload to be Ready, then leaves no room for new pods and
// restarts its Deployment as kubectl rollout restart does: the old pod serves on, the new one
// is not scheduled.
func restartIntoNoRoom(t *testing.T, ns string) {
	waitWorkload(t, client.ObjectKey{Namespace: ns, Name: "web"}, "Ready before the restart", nil)
	create(t, noRoomFor(ns))
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(dep.DeepCopy())
	if dep.Spec.Template.Annotations == nil {
		dep.Spec.Template.Annotations = map[string]string{}
	}
	dep.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339)
	if err := c.Patch(ctx, dep, patch, client.FieldOwner("kubectl-rollout")); err != nil {
		t.Fatal(err)
	}
}

// failBuilds plays the kubelet a simulated cluster has not for the build Job's pods, which the
// namespace's LimitRange keeps from any node: each fails as a build of a repository that does
// not exist would, until the Job has failed.
func failBuilds(t *testing.T, ns string) {
	testenv.Eventually(t, 2*time.Minute, "the build failed", func() error {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "image-build"}); err != nil {
			return err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != corev1.PodPending {
				continue
			}
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "build", Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "failed to solve: repository not found",
					StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}}}
			if err := c.Status().Update(ctx, p); err != nil {
				return err
			}
		}
		var claims scorev1b1.ResourceClaimList
		if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(claims.Items) != 1 || claims.Items[0].Status.Phase != scorev1b1.ClaimPhaseFailed {
			return fmt.Errorf("the image claim is not Failed yet")
		}
		return nil
	})
}

// denyDeployments binds a ValidatingAdmissionPolicy that refuses Deployments in the namespace,
// and waits until the API server enforces it.
func denyDeployments(t *testing.T, ns string) {
	name := "e2e-why-no-deployments"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "Deployments are not allowed in this namespace"}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-why": ns}}}}}
	create(t, policy, binding)
	t.Cleanup(func() { _ = c.Delete(ctx, binding); _ = c.Delete(ctx, policy) })
	probe := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}}}
	testenv.Eventually(t, 30*time.Second, "the policy enforced", func() error {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("a Deployment is not refused yet: %v", err)
	})
}

// noDeployments is a ResourceQuota of no Deployments, once the quota controller has counted.
func noDeployments(t *testing.T, ns string) {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployments"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")}}}
	create(t, q)
	testenv.Eventually(t, 30*time.Second, "the quota counted", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
			return err
		}
		if _, ok := q.Status.Used["count/deployments.apps"]; !ok {
			return fmt.Errorf("no usage yet")
		}
		return nil
	})
}

// dashboardOf serves the dashboard with as's rights for the test, and returns a function that
// reads a Workload's page as text, unescaped.
func dashboardOf(t *testing.T, as *rest.Config) func(t *testing.T, ns, name string) string {
	t.Helper()
	dctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	s, err := dashboard.New(dctx, dashboard.Options{Config: as, AllowedHosts: []string{"why.test"},
		ConfigNamespace: "score-system", ConfigName: "orchestrator-config", ConfigKey: "config.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return func(t *testing.T, ns, name string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/workloads/"+ns+"/"+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "why.test"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", resp.Status, body)
		}
		return html.UnescapeString(string(body))
	}
}

// asPodBlindUser is a user who may read the score.dev kinds, the config, apps and events, but
// not pods or Secrets.
func asPodBlindUser(t *testing.T) *rest.Config {
	t.Helper()
	name := "e2e-why-pod-blind"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"score.dev"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps", "events", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}, Verbs: []string{"create"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: name}}}
	create(t, role, binding)
	t.Cleanup(func() { _ = c.Delete(ctx, binding); _ = c.Delete(ctx, role) })
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: name}
	return as
}

// routeElsewhere is the class of a route provisioner whose routes name a Gateway that does not
// exist (the development cluster's score-dev is programmed by its gateway controller).
const routeElsewhere = "elsewhere"

// addRouteToAMissingGateway adds to the config, for the test, the catalog's route definition
// under class routeElsewhere with its parent renamed to score-system/missing.
func addRouteToAMissingGateway(t *testing.T) {
	t.Helper()
	edit := func(add bool) error {
		return devenv.EditConfig(ctx, c, func(doc map[string]any) error {
			var kept []any
			var route map[string]any
			for _, p := range doc["provisioners"].([]any) {
				def := p.(map[string]any)
				if def["class"] == routeElsewhere {
					continue
				}
				if def["type"] == "route" && def["class"] == nil {
					route = def
				}
				kept = append(kept, p)
			}
			if add {
				if route == nil {
					return errors.New("the config has no route definition")
				}
				elsewhere := maps.Clone(route)
				elsewhere["uri"], elsewhere["class"] = "template://e2e/route-elsewhere", routeElsewhere
				elsewhere["init"] = strings.Replace(route["init"].(string), "name: score-dev", "name: missing", 1)
				kept = append([]any{elsewhere}, kept...) // before the catalog's, which serves every class
			}
			doc["provisioners"] = kept
			return nil
		})
	}
	if err := edit(true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := edit(false); err != nil {
			t.Error(err)
		}
	})
}
