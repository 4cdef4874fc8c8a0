package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The development cluster's Gateway (config/gateway/score-dev.yaml), the parent of the
// catalog's routes (config/provisioners/route.yaml).
const (
	GatewayNamespace = SystemNamespace
	GatewayName      = "score-dev"
	// gatewayAddressService is the Envoy Service whose cluster IP is the Gateway's address.
	gatewayAddressService = "score-dev-envoy"
	gatewayManifests      = "config/gateway/score-dev.yaml"
	gatewayContourConfig  = "config/gateway/contour.yaml"
	gatewayLog            = "gateway.log"
	gatewayPid            = "gateway.pid"
)

// contourCRDs are the CRDs of Contour's release that its controller watches besides the
// Gateway API's: it does not start without them. The others of the release
// (ContourConfiguration, ContourDeployment, ExtensionService) are for what make dev does not
// use: a configuration object, Contour's own provisioner, extension services (switched off).
var contourCRDs = []string{"httpproxies.projectcontour.io", "tlscertificatedelegations.projectcontour.io"}

// ErrGatewayExited is a gateway controller that exited before it answered its health check
// (a port taken meanwhile by another program, a cluster it cannot reach); its log says why.
var ErrGatewayExited = errors.New("the gateway controller exited")

// Gateway is the development cluster's Gateway API implementation: Contour's controller
// (contour serve, built from source by hack/tools.sh), run as a process on this machine against
// the cluster, as make dev runs the score controllers. It serves one Gateway,
// score-system/score-dev: it accepts the HTTPRoutes that attach to it (their status.parents:
// Accepted, ResolvedRefs) and reports the Gateway Accepted and Programmed, at the address of
// its data plane's Service (an Envoy Deployment, simulated by kwok like every pod there).
// docs/provisioners.md says why Contour.
type Gateway struct {
	// Bin holds contour and contour-crds.yaml (hack/tools.sh links them there).
	Bin string
	// Dir keeps the controller's configuration, log and pid file.
	Dir string
	// Kubeconfig is the cluster's.
	Kubeconfig string
}

// Log is the path of the gateway controller's log.
func (g *Gateway) Log() string { return filepath.Join(g.Dir, gatewayLog) }

func (g *Gateway) process() background {
	return background{name: "the gateway controller", log: g.Log(), pid: filepath.Join(g.Dir, gatewayPid), owner: g.Kubeconfig}
}

// Up installs the Gateway, (re)starts its controller and waits until the Gateway is
// Programmed, within timeout. It is safe to run again: everything is applied server-side and
// the controller is replaced. It returns the controller's pid.
func (g *Gateway) Up(ctx context.Context, c client.Client, bundle fs.FS, timeout time.Duration) (int, error) {
	address, err := g.Install(ctx, c, bundle)
	if err != nil {
		return 0, err
	}
	if _, err := g.Stop(); err != nil {
		return 0, err
	}
	config, err := fs.ReadFile(bundle, gatewayContourConfig)
	if err != nil {
		return 0, err
	}
	configPath := filepath.Join(g.Dir, "gateway-contour.yaml")
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		return 0, err
	}
	// Its ports are free when chosen, but another program may take one before the controller
	// binds it; the controller then exits, and starts again on other ports.
	var pid int
	for attempt := 1; ; attempt++ {
		if pid, err = g.start(ctx, configPath, address); !errors.Is(err, ErrGatewayExited) || attempt == 3 {
			break
		}
	}
	if err != nil {
		return 0, err
	}
	return pid, WaitGatewayProgrammed(ctx, c, timeout)
}

// start runs the controller and waits until it answers its health check.
func (g *Gateway) start(ctx context.Context, configPath, address string) (int, error) {
	ports, err := freePorts(3)
	if err != nil {
		return 0, err
	}
	xds, health, debug := ports[0], ports[1], ports[2]
	argv := []string{filepath.Join(g.Bin, "contour"), "serve",
		"--kubeconfig=" + g.Kubeconfig,
		"--config-path=" + configPath,
		// One process on this machine: no replica to elect.
		"--disable-leader-election",
		// Its xDS server listens on the loopback only, where no Envoy connects (kwok runs none).
		"--insecure", "--xds-address=127.0.0.1", "--xds-port=" + strconv.Itoa(xds),
		"--http-address=127.0.0.1", "--http-port=" + strconv.Itoa(health),
		"--health-address=127.0.0.1", "--health-port=" + strconv.Itoa(health),
		"--debug-http-address=127.0.0.1", "--debug-http-port=" + strconv.Itoa(debug),
		"--ingress-status-address=" + address,
		// The routes of the Gateway API standard channel it serves are HTTPRoutes; the
		// vendored CRDs (config/crd/thirdparty) hold no other route kind of the versions it reads.
		"--disable-feature=extensionservices", "--disable-feature=tlsroutes", "--disable-feature=grpcroutes",
		"--disable-feature=tcproutes", "--disable-feature=backendtlspolicies",
	}
	p := g.process()
	pid, exited, err := p.start(argv)
	if err != nil {
		return 0, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", health)
	deadline := time.Now().Add(30 * time.Second)
	for !answers(ctx, url) {
		if time.Now().After(deadline) {
			_, _ = p.stop()
			return 0, fmt.Errorf("the gateway controller (pid %d) does not answer %s after 30s (log: %s)", pid, url, g.Log())
		}
		select {
		case <-exited:
			return 0, fmt.Errorf("%w (log: %s)", ErrGatewayExited, g.Log())
		case <-ctx.Done():
			_, _ = p.stop()
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return pid, nil
}

// Stop stops the controller Up started, if it still runs, and returns its pid (0 when none
// ran).
func (g *Gateway) Stop() (int, error) { return g.process().stop() }

// Install applies the CRDs of Contour's release that its controller watches, the GatewayClass,
// the Gateway and its data plane (config/gateway/score-dev.yaml), and returns the Gateway's
// address: its data plane's Service's cluster IP. The Gateway API CRDs and the namespace come
// from Install.
func (g *Gateway) Install(ctx context.Context, c client.Client, bundle fs.FS) (string, error) {
	raw, err := os.ReadFile(filepath.Join(g.Bin, "contour-crds.yaml"))
	if err != nil {
		return "", fmt.Errorf("the gateway controller's CRDs (hack/tools.sh builds them into bin/): %w", err)
	}
	crds, err := DecodeDocuments(raw)
	if err != nil {
		return "", fmt.Errorf("contour-crds.yaml: %w", err)
	}
	var names []string
	for _, crd := range crds {
		if !slices.Contains(contourCRDs, crd.GetName()) {
			continue
		}
		if err := apply(ctx, c, crd); err != nil {
			return "", err
		}
		names = append(names, crd.GetName())
	}
	if len(names) != len(contourCRDs) {
		return "", fmt.Errorf("contour-crds.yaml holds %v, not every one of %v", names, contourCRDs)
	}
	if err := waitEstablished(ctx, c, names); err != nil {
		return "", err
	}
	if _, err := applyFiles(ctx, c, bundle, gatewayManifests); err != nil {
		return "", err
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: GatewayNamespace, Name: gatewayAddressService}, svc); err != nil {
		return "", err
	}
	if svc.Spec.ClusterIP == "" {
		return "", fmt.Errorf("the Service %s/%s has no cluster IP", GatewayNamespace, gatewayAddressService)
	}
	return svc.Spec.ClusterIP, nil
}

// WaitGatewayProgrammed waits until the Gateway is Accepted and Programmed for its generation.
func WaitGatewayProgrammed(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no status yet"
	for {
		gw := &unstructured.Unstructured{}
		gw.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"})
		if err := c.Get(ctx, client.ObjectKey{Namespace: GatewayNamespace, Name: GatewayName}, gw); err != nil {
			return err
		}
		ok, why := gatewayProgrammed(gw)
		if ok {
			return nil
		}
		last = why
		if time.Now().After(deadline) {
			return fmt.Errorf("the Gateway %s/%s is not Programmed within %s: %s", GatewayNamespace, GatewayName, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// gatewayProgrammed reports whether the Gateway is Accepted and Programmed for its
// generation, and else what its status says.
func gatewayProgrammed(gw *unstructured.Unstructured) (bool, string) {
	var status struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	raw, _, _ := unstructured.NestedMap(gw.Object, "status")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
		return false, err.Error()
	}
	for _, typ := range []string{"Accepted", "Programmed"} {
		cond := meta.FindStatusCondition(status.Conditions, typ)
		switch {
		case cond == nil:
			return false, "no " + typ + " condition yet"
		case cond.ObservedGeneration != gw.GetGeneration():
			return false, typ + " is for generation " + strconv.FormatInt(cond.ObservedGeneration, 10)
		case cond.Status != metav1.ConditionTrue:
			return false, typ + " is " + string(cond.Status) + ": " + cond.Message
		}
	}
	return true, ""
}

// answers reports whether url answers 200.
func answers(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freePorts are n loopback ports free when asked, all different: each stays bound until all
// are chosen.
func freePorts(n int) ([]int, error) {
	var ports []int
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
