package hostile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// carelessWorker is a definition a platform adds that takes pod fields from params, as
// careless templates do: whoever names the resource chooses its pod's host network,
// privilege, volume source and ServiceAccount.
var carelessWorker = map[string]any{
	"uri": "template://hostile/worker", "type": "worker", "description": "A worker, configured by params.",
	"init":    "name: worker-{{ substr 0 8 .Guid }}\n",
	"outputs": "host: {{ .Init.name }}\n",
	"manifests": `- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: {{ .Init.name }}}
  spec:
    selector: {matchLabels: {app: {{ .Init.name }}}}
    template:
      metadata: {labels: {app: {{ .Init.name }}}}
      spec:
        hostNetwork: {{ .Params.hostNetwork | default false }}
        hostPID: {{ .Params.hostPID | default false }}
        serviceAccountName: {{ .Params.serviceAccount | default "default" }}
        containers:
          - name: worker
            image: busybox
            securityContext: {privileged: {{ .Params.privileged | default false }}}
            volumeMounts: [{name: data, mountPath: /data}]
        volumes:
          - name: data
            {{ .Params.volumeKind | default "emptyDir" }}: {{ if .Params.path }}{path: {{ .Params.path }}}{{ else }}{}{{ end }}
`,
}

// editConfig changes the installed config for the test and puts it back when the test ends.
func editConfig(t *testing.T, edit func(doc map[string]any)) {
	t.Helper()
	before := &corev1.ConfigMap{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: "orchestrator-config"}, before); err != nil {
		t.Fatal(err)
	}
	if err := devenv.EditConfig(ctx, admin, func(doc map[string]any) error { edit(doc); return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cm := &corev1.ConfigMap{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(before), cm); err != nil {
			t.Error(err)
			return
		}
		cm.Data = before.Data
		if err := admin.Update(ctx, cm); err != nil {
			t.Error(err)
		}
	})
}

// A careless definition must not give a tenant a Deployment with privileged, hostNetwork,
// hostPID and a hostPath / volume, nor, in a namespace enforcing baseline, a pod running as
// another ServiceAccount of the namespace, one bound to edit, its token mounted. Through a
// definition the platform adds that takes those fields from params, mallory asks for each:
// every Workload is refused with PermissionDenied and no Deployment of the definition exists —
// the pod rules hold before admission, and for the ServiceAccount, which Pod Security does not
// judge at all (without the rules, every Deployment is created, and the one as
// namespace-editor runs).
func TestHostileCarelessDefinitionGivesNoHostAndNoOtherAccount(t *testing.T) {
	editConfig(t, func(doc map[string]any) {
		doc["provisioners"] = append(doc["provisioners"].([]any), carelessWorker)
	})
	// The platform's own ServiceAccount in mallory's namespace, bound to edit.
	editor := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "namespace-editor"}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "namespace-editor-edits"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: editor.Name, Namespace: teamB}}}
	for _, o := range []client.Object{editor, binding} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, o) })
	}
	for _, tc := range []struct {
		name, params, rule string
	}{
		{"the host's network and PIDs", `{"hostNetwork": true, "hostPID": true}`, `host namespaces (hostNetwork=true, hostPID=true), which the pod rule "hostNamespaces" refuses`},
		{"a privileged container", `{"privileged": true}`, `which the pod rule "privileged" refuses`},
		{"the node's root", `{"volumeKind": "hostPath", "path": "/"}`, `hostPath volumes (volume "data"), which the pod rule "hostPath" refuses`},
		{"the namespace's editor", `{"serviceAccount": "namespace-editor"}`, `serviceAccountName: the pods may run as the namespace's default ServiceAccount only (pods.serviceAccountName names none), not "namespace-editor"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "worker-" + strings.ToLower(strings.NewReplacer(" ", "-", "'", "").Replace(tc.name))
			create(t, testenv.Workload(teamB, name, testenv.WithResource("worker", "worker", testenv.ResourceParams(tc.params))))
			refused(t, teamB, name, scorev1b1.ReasonPermissionDenied)
			c := claimOf(t, teamB, name, "worker")
			if c.Status.Reason != scorev1b1.ReasonPermissionDenied || !strings.Contains(c.Status.Message, tc.rule) {
				t.Fatalf("the claim: %s %s; want the rule %q", c.Status.Reason, c.Status.Message, tc.rule)
			}
			var deployments appsv1.DeploymentList
			if err := admin.List(ctx, &deployments, client.InNamespace(teamB), client.HasLabels{scorev1b1.LabelInstance}); err != nil {
				t.Fatal(err)
			}
			for _, d := range deployments.Items {
				if strings.HasPrefix(d.Name, "worker-") {
					t.Fatalf("the worker's Deployment %s exists: %+v", d.Name, d.Spec.Template.Spec)
				}
			}
		})
	}
	var pods corev1.PodList
	if err := admin.List(ctx, &pods, client.InNamespace(teamB)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if s := p.Spec; s.HostNetwork || s.HostPID || s.ServiceAccountName == editor.Name {
			t.Errorf("pod %s: hostNetwork %v, hostPID %v, serviceAccountName %s", p.Name, s.HostNetwork, s.HostPID, s.ServiceAccountName)
		}
	}
	othersUntouched(t)
}

// A probe's host that reaches the pod has the kubelet send the tenant's request, from the
// node, to the address she names (the cloud's metadata service). Mallory's
// Workload with such a probe is SpecInvalid within 15 seconds, naming the container and the
// probe, and nothing is planned for it. The platform admits probe hosts by namespace
// (probeHosts over its labels): labelled, the same Workload is valid and its Deployment
// applied with the probe (Pod Security admission, which enforces baseline in mallory's
// namespace, still refuses its pods from Kubernetes 1.34: the platform's choice where it
// enforces privileged); unlabelled again, it is SpecInvalid again — the relabelling alone
// brings it back.
func TestHostileProbeHostIsRefused(t *testing.T) {
	const name = "prober"
	create(t, testenv.Workload(teamB, name, func(w *scorev1b1.Workload) {
		w.Spec.Containers["main"] = scorev1b1.Container{Image: "nginx:1.27", LivenessProbe: &scorev1b1.ContainerProbe{
			HTTPGet: &scorev1b1.HTTPProbe{Host: ptr.To("169.254.169.254"), Path: "/latest/meta-data/iam/security-credentials/", Port: 80}}}
	}))
	msg := refused(t, teamB, name, scorev1b1.ReasonSpecInvalid)
	if want := `spec.containers.main.livenessProbe.httpGet.host: The platform does not allow a probe to name a host in this namespace`; !strings.Contains(msg, want) {
		t.Fatalf("message %q, want it to name the probe: %q", msg, want)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: teamB, Name: name}, &scorev1b1.WorkloadPlan{}); err == nil {
		t.Fatal("a plan was made for the refused Workload")
	}

	// The platform admits probe hosts where it labels the namespace.
	const label = "probes.example.com/any-host"
	editConfig(t, func(doc map[string]any) {
		doc["probeHosts"] = map[string]any{"matchLabels": map[string]any{label: "allowed"}}
	})
	relabel := func(value string) {
		t.Helper()
		ns := &corev1.Namespace{}
		if err := admin.Get(ctx, client.ObjectKey{Name: teamB}, ns); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(ns.Labels, label)
		} else {
			ns.Labels[label] = value
		}
		if err := admin.Update(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	relabel("allowed")
	t.Cleanup(func() { relabel("") })
	testenv.Eventually(t, time.Minute, "the admitted probe applied", func() error {
		w := &scorev1b1.Workload{}
		if err := tenant.Get(ctx, client.ObjectKey{Namespace: teamB, Name: name}, w); err != nil {
			return err
		}
		if c := testenv.Condition(w, scorev1b1.ConditionInputsValid); c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			return fmt.Errorf("InputsValid %s %s: %s", c.Status, c.Reason, c.Message)
		}
		dep := &appsv1.Deployment{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: teamB, Name: name}, dep); err != nil {
			return err
		}
		if p := dep.Spec.Template.Spec.Containers[0].LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Host != "169.254.169.254" {
			return fmt.Errorf("the Deployment's probe: %+v", p)
		}
		return nil
	})

	relabel("")
	refused(t, teamB, name, scorev1b1.ReasonSpecInvalid)
	othersUntouched(t)
}

// A pod the runtime makes must not mount the namespace's default ServiceAccount token.
// Mallory's Workload runs, and its pods have no token: the Deployment says
// automountServiceAccountToken: false, and the pods the cluster made from it carry no
// projected token volume (kube-api-access-…, which holds the token).
func TestHostilePodsCarryNoToken(t *testing.T) {
	const name = "tokenless"
	create(t, testenv.Workload(teamB, name, testenv.WithPort("http", 80)))
	ready(t, teamB, name, 2*time.Minute)
	testenv.Eventually(t, time.Minute, "the Workload's pods, without a token", func() error {
		var pods corev1.PodList
		if err := admin.List(ctx, &pods, client.InNamespace(teamB), client.MatchingLabels{scorev1b1.LabelWorkload: name}); err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return errors.New("no pod yet")
		}
		for _, p := range pods.Items {
			if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
				return fmt.Errorf("pod %s: automountServiceAccountToken %v", p.Name, a)
			}
			for _, v := range p.Spec.Volumes {
				if v.Projected == nil {
					continue
				}
				for _, s := range v.Projected.Sources {
					if s.ServiceAccountToken != nil {
						return fmt.Errorf("pod %s mounts a ServiceAccount token (volume %s)", p.Name, v.Name)
					}
				}
			}
		}
		return nil
	})
	othersUntouched(t)
}
