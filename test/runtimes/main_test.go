// Package runtimes runs the runtime conformance cases against both runtimes on one simulated
// cluster (a real kube-apiserver and etcd, kube-controller-manager, kube-scheduler and kwok)
// with the development config installed: the Kubernetes runtime for the namespaces kube-shop
// and kube-other, the Docker runtime for shop and other, on a real dockerd (Debian's, started
// for the run with its own data root and socket) and its agent on the identity scorectl host
// add makes. Images are made from a file (a static test server), never pulled; containers are
// reached only through the ports the agent publishes on 127.0.0.1.
package runtimes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/score-orchestrator/score-orchestrator/internal/build/debimage"
	"github.com/score-orchestrator/score-orchestrator/internal/build/toolcache"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/controlplane"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/dockerd"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

var (
	hub       client.Client
	hubConfig *rest.Config
	ctx       = context.Background()
	// running is the test process's context, which the controllers and the agent run under.
	running context.Context
	engine  *dockerd.Engine
	// skipped says why the Docker runtime's cases cannot run here (no dockerd), "" when they can.
	skipped string
	// agentConfig is the agent's connection to the hub: the identity scorectl host add makes.
	agentConfig *rest.Config
	// stopAgent and stopControllers stop what runs now, and return once it has stopped.
	mu                         sync.Mutex
	stopAgent, stopControllers func()
	// agentWrites counts the agent's writes to the hub, its Lease's renewals left out.
	agentWrites atomic.Int64
	// composeSkipped says why score-compose's provisioners are not in the config (no
	// conformance corpus here), "" when they are.
	composeSkipped string
)

const (
	image = dockerd.TestServer
	host  = "test-host"
	// shop and other are the namespaces the Docker host serves; elsewhere is one it does not.
	shop, other, elsewhere = "shop", "other", "elsewhere"
	// kubeShop and kubeOther run on the Kubernetes runtime.
	kubeShop, kubeOther = "kube-shop", "kube-other"
)

// dbProvisioner is a dependency with a secret output, for either runtime.
const dbProvisioner = `
uri: template://runtimes/db
type: db
init: |
  name: db-{{ substr 0 8 .Guid }}
state: |
  password: {{ dig "password" (randAlphaNum 24) .State | quote }}
outputs: |
  host: {{ .Init.name }}.internal
  password: {{ encodeSecretRef .Init.name "password" }}
expected_outputs: [host, password]
manifests: |
  - apiVersion: v1
    kind: Secret
    metadata:
      name: {{ .Init.name }}
      namespace: {{ .Namespace }}
    stringData: {password: {{ .State.password | quote }}}
`

func TestMain(m *testing.M) {
	os.Exit(testenv.SimulatedMain(m, testenv.Simulated{Name: "score-runtimes", Clusters: map[string]testenv.ClusterSpec{"": {}}, Install: true},
		func(env *testenv.SimulatedEnv) (func(), error) {
			k := env.Clusters[""]
			hub, hubConfig = k.Client, k.Config
			c, cancel := context.WithCancel(context.Background())
			running = c
			if err := setUp(env.Root); err != nil {
				cancel()
				return nil, err
			}
			return func() {
				mu.Lock()
				defer mu.Unlock()
				if stopAgent != nil {
					stopAgent()
				}
				stopControllers()
				cancel()
				if engine != nil {
					engine.Stop()
				}
			}, nil
		}))
}

// setUp installs the config with the Docker backend, starts the controllers, and the Docker
// host with its agent when dockerd is installed.
func setUp(root string) error {
	var objs []client.Object
	for _, ns := range []string{shop, other, elsewhere, kubeShop, kubeOther} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if err := testenv.CreateAll(running, hub, objs...); err != nil {
		return err
	}
	config, err := withDocker(root)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{}
	if err := hub.Get(running, client.ObjectKey{Namespace: devenv.SystemNamespace, Name: devenv.ConfigMapName}, cm); err != nil {
		return err
	}
	cm.Data[devenv.ConfigKey] = string(config)
	if err := hub.Update(running, cm); err != nil {
		return err
	}
	if stopControllers, err = startControllers(); err != nil {
		return err
	}
	if engine, err = dockerd.Start(); err != nil {
		// A machine without dockerd, or where it cannot start (no root, another one running):
		// the Docker runtime's tests say why they skip, unless they are required.
		if os.Getenv("SCORE_DOCKER_REQUIRED") == "" {
			skipped = "no Docker Engine here: " + err.Error()
			return nil
		}
		return err
	}
	if err := engine.ImportTestServer(running, root); err != nil {
		return err
	}
	if composeSkipped == "" {
		// What score-compose's postgres and redis name, made from Debian's packages.
		cache, err := toolcache.Dir()
		if err != nil {
			return err
		}
		for _, img := range []debimage.Image{debimage.Postgres, debimage.Redis} {
			if err := debimage.Ensure(running, engine.Client, img, filepath.Join(cache, "images"), func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }); err != nil {
				return err
			}
		}
	}
	kubeconfig, err := hosts.Register(running, hubConfig, hub, hosts.Registration{Name: host, Namespaces: []string{shop, other}, Address: "127.0.0.1"})
	if err != nil {
		return fmt.Errorf("registering the host: %w", err)
	}
	if agentConfig, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil {
		return err
	}
	stopAgent, err = startAgent()
	return err
}

// withDocker is the development config with the Docker backend first in web-service and the
// db provisioner.
func withDocker(root string) ([]byte, error) {
	assembled, err := orchconfig.DevelopmentConfig(os.DirFS(root))
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(assembled, &doc); err != nil {
		return nil, err
	}
	var provisioner map[string]any
	if err := yaml.Unmarshal([]byte(dbProvisioner), &provisioner); err != nil {
		return nil, err
	}
	if err := devenv.AddDockerCatalog(doc, os.DirFS(root)); err != nil {
		return nil, err
	}
	if err := devenv.AddDockerBackend(doc, "docker-web", shop, other); err != nil {
		return nil, err
	}
	doc["provisioners"] = append(doc["provisioners"].([]any), provisioner)
	// score-compose's default provisioners, unchanged, first: they serve the Docker host's
	// claims before the development catalog's Compose definitions.
	files, err := conformance.ComposeProvisionerFiles()
	if err != nil || len(files) == 0 {
		composeSkipped = fmt.Sprintf("score-compose's provisioner file is not here (%v); set SCORE_CONFORMANCE_DIR", err)
		if os.Getenv(conformance.RequiredEnv) != "" {
			return nil, errors.New(composeSkipped)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var list []any
		if err := yaml.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		doc["provisioners"] = append(list, doc["provisioners"].([]any)...)
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if _, err := orchconfig.Parse(out); err != nil {
		return nil, fmt.Errorf("the config with the Docker backend: %w", err)
	}
	return out, nil
}

// startControllers runs the control plane as score-controllers sets it up, until stop.
func startControllers() (stop func(), err error) {
	opts := testenv.ManagerOptions()
	opts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := ctrl.NewManager(hubConfig, opts)
	if err != nil {
		return nil, err
	}
	if err := controlplane.Setup(mgr, controlplane.DefaultOptions()); err != nil {
		return nil, err
	}
	return run(mgr), nil
}

// startAgent runs the agent on the host's identity, serving its namespaces.
func startAgent() (stop func(), err error) {
	return engine.StartAgent(running, agentConfig, dockerd.Agent{Host: host, Namespaces: []string{shop, other}, ProbeEvery: 250 * time.Millisecond, Writes: &agentWrites,
		Images: debimage.Aliases()})
}

func run(mgr ctrl.Manager) func() {
	mctx, cancel := context.WithCancel(running)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(mctx) }()
	return func() { cancel(); <-done }
}

// restart stops what stop stops and starts it again.
func restart(t *testing.T, stop *func(), start func() (func(), error)) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	(*stop)()
	var err error
	if *stop, err = start(); err != nil {
		t.Fatal(err)
	}
}

func needDocker(t *testing.T) {
	if skipped != "" {
		t.Skip(skipped)
	}
}

// passes is how many passes the controller named has finished, and how many run now (its
// workers' gauges, in this process's metrics registry, which every manager here shares).
func passes(t *testing.T, controller string) (finished, running float64) {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "controller" && l.GetValue() == controller }) {
				continue
			}
			switch f.GetName() {
			case "controller_runtime_reconcile_total":
				finished += m.GetCounter().GetValue()
			case "controller_runtime_active_workers":
				running += m.GetGauge().GetValue()
			}
		}
	}
	return finished, running
}

// settled waits until the controller named has finished at least n passes since it had
// finished since, and runs none: the positive control of a test that then asserts that those
// passes did nothing (they ran, and they wrote or created nothing).
func settled(t *testing.T, controller string, since float64, n int) {
	t.Helper()
	testenv.Eventually(t, time.Minute, fmt.Sprintf("%d passes of %s, none running", n, controller), func() error {
		finished, running := passes(t, controller)
		if finished < since+float64(n) || running > 0 {
			return fmt.Errorf("%.0f finished since, %.0f running", finished-since, running)
		}
		return nil
	})
}
