package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/simcluster"
)

// Simulated says what simulated clusters a test package runs on.
type Simulated struct {
	// Name prefixes the clusters' names (each adds its role and the process's ID) and the
	// state directory's.
	Name string
	// Clusters are the package's clusters by role; one role "" is a package's one cluster.
	Clusters map[string]ClusterSpec
	// Install puts the control plane's kinds, the development config, catalog and templates on
	// the cluster of role "" (or "hub"), as make dev does.
	Install bool
	// Gateway, with Install, runs the development cluster's gateway controller there too, with
	// the Gateway the catalog's routes attach to, as make dev does (devenv.Gateway).
	Gateway bool
}

// ClusterSpec is one simulated cluster of a package.
type ClusterSpec struct {
	// Volumes are the PersistentVolumes made for it (it has no provisioner).
	Volumes int
	// AuditWrites logs every write in its API server's audit log.
	AuditWrites bool
}

// Cluster is one running simulated cluster and its administrator's connection.
type Cluster struct {
	*simcluster.Cluster
	Config *rest.Config
	Client client.Client
}

// SimulatedEnv is what a package's tests run on.
type SimulatedEnv struct {
	// Root is the repository; State the package's scratch directory, deleted at the end.
	Root, State string
	// Clusters are the running clusters by role.
	Clusters map[string]*Cluster
	// Config is the Orchestrator Config installed, when Install was asked.
	Config *orchconfig.Config
	// Gateway is the gateway controller, when Gateway was asked.
	Gateway *devenv.Gateway
}

// SimulatedMain runs a package's tests on simulated clusters of its own, from TestMain: it
// starts the clusters (at once; their start-up output goes to a log in the state directory,
// printed when one fails), connects to each as its administrator, installs the control plane
// when asked, calls setup (the package's controllers; the function it returns runs after the
// tests), runs the tests and brings everything down. It returns the exit code for os.Exit.
// The controllers' log goes to stderr, errors only, as Main's.
func SimulatedMain(m *testing.M, s Simulated, setup func(env *SimulatedEnv) (stop func(), err error)) int {
	// Before the first client: controller-runtime prints a stack trace for a logger used unset.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(logLevel()), zap.StacktraceLevel(zapcore.PanicLevel)))
	env, down, err := startSimulated(s)
	defer down()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := func() {}
	if setup != nil {
		if stop, err = setup(env); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	code := m.Run()
	if stop != nil {
		stop()
	}
	return code
}

// startSimulated starts the clusters; down stops them and deletes the state, whatever failed.
func startSimulated(s Simulated) (*SimulatedEnv, func(), error) {
	state, err := os.MkdirTemp("", s.Name+"-")
	if err != nil {
		return nil, func() {}, err
	}
	env := &SimulatedEnv{Root: RepoRoot(), State: state, Clusters: map[string]*Cluster{}}
	var mu sync.Mutex
	var started []*simcluster.Cluster
	down := func() {
		env.stopGateway()
		for _, k := range started {
			// Its start-up log is closed by now: the shutdown's output is printed only when it
			// fails, which would leave the cluster running.
			var out bytes.Buffer
			k.Output = &out
			if err := k.Down(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the simulated cluster %s: %v\n%s", k.Name, err, out.String())
			}
		}
		_ = os.RemoveAll(state)
	}
	var wg sync.WaitGroup
	var errs error
	for role, spec := range s.Clusters {
		name := s.Name
		if role != "" {
			name += "-" + role
		}
		dir := filepath.Join(state, "cluster", role)
		log, err := os.Create(filepath.Join(state, "cluster-"+role+".log"))
		if err != nil {
			return nil, down, err
		}
		k := &simcluster.Cluster{Root: env.Root, Name: fmt.Sprintf("%s-%d", name, os.Getpid()), Dir: dir, Volumes: spec.Volumes, AuditWrites: spec.AuditWrites, Output: log}
		mu.Lock()
		started = append(started, k)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer log.Close()
			err := k.Up()
			if err == nil {
				var c *Cluster
				if c, err = connect(k); err == nil {
					mu.Lock()
					env.Clusters[role] = c
					mu.Unlock()
					return
				}
			}
			out, _ := os.ReadFile(log.Name())
			mu.Lock()
			errs = errors.Join(errs, fmt.Errorf("starting the simulated cluster %q: %w\n%s", role, err, out))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if errs != nil {
		return nil, down, errs
	}
	if s.Install {
		hub := env.Clusters[""]
		if hub == nil {
			hub = env.Clusters["hub"]
		}
		if env.Config, err = devenv.Install(context.Background(), hub.Client, os.DirFS(env.Root)); err != nil {
			return nil, down, fmt.Errorf("installing: %w", err)
		}
		if s.Gateway {
			if err := env.startGateway(hub); err != nil {
				return nil, down, err
			}
		}
	}
	return env, down, nil
}

// stopGateway stops the gateway controller, if one was started.
func (env *SimulatedEnv) stopGateway() {
	if env.Gateway == nil {
		return
	}
	if _, err := env.Gateway.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the gateway controller: %v\n", err)
	}
}

// startGateway runs the development cluster's gateway controller on hub, as make dev does;
// its log is in the state directory, printed when it fails.
func (env *SimulatedEnv) startGateway(hub *Cluster) error {
	env.Gateway = &devenv.Gateway{Bin: filepath.Join(env.Root, "bin"), Dir: env.State, Kubeconfig: hub.Kubeconfig()}
	if _, err := env.Gateway.Up(context.Background(), hub.Client, os.DirFS(env.Root), time.Minute); err != nil {
		out, _ := os.ReadFile(env.Gateway.Log())
		return fmt.Errorf("starting the gateway: %w\n%s", err, out)
	}
	return nil
}

// connect is the cluster administrator's connection.
func connect(k *simcluster.Cluster) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig())
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	return &Cluster{Cluster: k, Config: cfg, Client: c}, nil
}
