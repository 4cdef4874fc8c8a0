package hostile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// sizeInjection is a volume size that, printed unquoted into a careless volume definition,
// adds a Deployment with privileged, hostNetwork, hostPID and a hostPath: / volume to the
// provisioner's objects, and a ConfigMap to swallow the rest.
const sizeInjection = "1Gi}}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: pwn}\n" +
	"  spec: {selector: {matchLabels: {app: pwn}}, template: {metadata: {labels: {app: pwn}}, spec: {hostNetwork: true, hostPID: true, containers: [{name: c, image: busybox, securityContext: {privileged: true}, volumeMounts: [{name: root, mountPath: /host}]}], volumes: [{name: root, hostPath: {path: /}}]}}}\n" +
	"- {apiVersion: v1, kind: ConfigMap, metadata: {name: swallow}, data: {x: "

// A tenant's text must not become structure in a provisioner's output. Through the shipped
// catalog the size is refused by its type, naming the param, before anything is made; through
// a careless definition (untyped, unquoted) it is only the volume's
// size, which the API server refuses: no Deployment, no ConfigMap, nothing privileged.
func TestHostileParamCannotAddObjects(t *testing.T) {
	t.Run("the catalog's volume", func(t *testing.T) {
		create(t, testenv.Workload(teamB, "inject", testenv.WithVolume("/data", "${resources.data}"),
			testenv.WithResource("data", "volume", testenv.ResourceParams(sizeParams()))))
		msg := refused(t, teamB, "inject", scorev1b1.ReasonSpecInvalid)
		if !strings.HasPrefix(msg, "spec.resources.data.params.size: The value must be a Kubernetes quantity") {
			t.Errorf("the message does not name the param: %s", msg)
		}
		if _, err := findClaim(teamB, "inject", "data"); err == nil {
			t.Error("a claim was made for a refused param")
		}
	})
	t.Run("a careless definition", func(t *testing.T) {
		create(t, testenv.Workload(teamB, "inject-careless", testenv.WithVolume("/data", "${resources.data}"),
			testenv.WithResource("data", "careless-volume", testenv.ResourceParams(sizeParams()))))
		// The run renders one PersistentVolumeClaim whose size is the text: the API server
		// refuses it (as an internal error, which the provisioner retries with backoff), and
		// the claim says so.
		testenv.Eventually(t, time.Minute, "the careless claim's size refused by the API server", func() error {
			c, err := findClaim(teamB, "inject-careless", "data")
			if err != nil {
				return err
			}
			if c.Status.Phase == scorev1b1.ClaimPhaseBound || !strings.Contains(c.Status.Message, "quantities must match") {
				return fmt.Errorf("claim %s: %s", c.Status.Phase, c.Status.Message)
			}
			return nil
		})
		for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ConfigMap{}} {
			name := map[bool]string{true: "pwn", false: "swallow"}[isDeployment(o)]
			if err := admin.Get(ctx, client.ObjectKey{Namespace: teamB, Name: name}, o); err == nil {
				t.Errorf("the size made %T %s", o, name)
			}
		}
		var pods corev1.PodList
		if err := admin.List(ctx, &pods, client.InNamespace(teamB)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.HostNetwork || p.Spec.HostPID {
				t.Errorf("pod %s runs in the host's namespaces", p.Name)
			}
		}
	})
	othersUntouched(t)
}

func isDeployment(o client.Object) bool { _, ok := o.(*appsv1.Deployment); return ok }

// sizeParams are the params {"size": sizeInjection}.
func sizeParams() string {
	raw, _ := json.Marshal(map[string]any{"size": sizeInjection})
	return string(raw)
}
