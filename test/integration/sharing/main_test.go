// Package sharing tests, on a real kube-apiserver and etcd, the platform's limits on instances
// it shares across namespaces: a consumer keeps the platform's deprovision policy,
// shares only the ids the platform lists, and its namespace holds at most the platform's bound
// of instances, however many claims take the last place at once. The provisioner runs as the
// binary sets it up, with concurrent workers.
package sharing

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	provisionerctl "github.com/score-orchestrator/score-orchestrator/internal/controller/provisioner"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	env *testenv.Env
	ctx = context.Background()
	// running is the test process's context, which the provisioner runs under.
	running context.Context
	// stopProvisioner stops the provisioner running now, and returns once it has stopped.
	stopProvisioner func()
)

// config is the Orchestrator Config: one profile, and the sharing limits' definitions, the
// external API's reached at apiURL.
const config = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
allowMutableRefs: true
profiles:
  - name: web-service
    backends:
      - {backendId: k8s-web, runtimeClass: kubernetes, version: 1.0.0, template: {kind: manifests, ref: "configmap://score-system/t/web.yaml"}}
defaults: {profile: web-service}
provisioners:
` + sharingLimitDefinitions + sharedAPIDefinition

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(c context.Context, e *testenv.Env) error {
		env, running = e, c
		api = startExternalAPI()
		if err := testenv.CreateAll(c, env.Client,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "score-system"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: limitsHome}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "api-token"}, StringData: map[string]string{"token": apiToken}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: "orchestrator-config"}, Data: map[string]string{"config.yaml": strings.ReplaceAll(config, "API_URL", api.server.URL)}},
		); err != nil {
			return err
		}
		var err error
		stopProvisioner, err = startProvisioner()
		return err
	}))
}

// startProvisioner runs the provisioner as the binary sets it up, with several workers: claims
// that take the last place at once are provisioned at once. It runs until stop, which returns
// once it has stopped, so that a test may change what a stopped provisioner has not seen.
func startProvisioner() (stop func(), err error) {
	opts := testenv.ManagerOptions()
	opts.Controller.SkipNameValidation = ptr.To(true) // the controllers of the provisioner stopped before
	mgr, err := ctrl.NewManager(env.Config, opts)
	if err != nil {
		return nil, err
	}
	store, err := configsource.Setup(mgr, configsource.DefaultOptions(), "score-provisioner")
	if err != nil {
		return nil, err
	}
	r := &provisionerctl.Reconciler{Client: mgr.GetClient(), Config: store, Recorder: mgr.GetEventRecorder("score-provisioner"), APINamespace: "score-system", HTTPClient: api.client, Concurrency: 8}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(running)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(mctx) }()
	return func() { cancel(); <-done }, nil
}

// restartProvisionerAfter stops the provisioner, does what it must not see, and starts a new
// one, as after a restart (or a backlog: the events of what was done reach it merged).
func restartProvisionerAfter(t *testing.T, do func()) {
	t.Helper()
	stopProvisioner()
	do()
	var err error
	if stopProvisioner, err = startProvisioner(); err != nil {
		t.Fatal(err)
	}
}

func newClaim(ns, name, workload, key, typ, id string, policy scorev1b1.DeprovisionPolicy) *scorev1b1.ResourceClaim {
	return &scorev1b1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: scorev1b1.ResourceClaimSpec{
			WorkloadRef: scorev1b1.LocalWorkloadRef{Name: workload, UID: "uid-" + workload},
			Key:         key, Type: typ, ID: id, DeprovisionPolicy: policy,
		},
	}
}

// waitPhase waits until the provisioner has answered the claim's current generation with the
// phase, and returns the claim as it then was.
func waitPhase(t *testing.T, c *scorev1b1.ResourceClaim, phase scorev1b1.ClaimPhase) *scorev1b1.ResourceClaim {
	t.Helper()
	return testenv.WaitClaimPhase(t, env.Client, c, phase)
}

func secretValue(t *testing.T, ns, name, key string) string {
	t.Helper()
	return testenv.SecretValue(t, env.Client, ns, name, key)
}

func gone(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.WaitGone(t, env.Client, obj)
}
