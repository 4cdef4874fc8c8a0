package scoreorchestrator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// pure are the packages of the pure core (docs/architecture.md draws them): they decide, and
// the controllers and the offline render call them. None may depend, even indirectly, on a
// client: controller-runtime, or client-go's rest, kubernetes, dynamic, discovery or clientcmd.
var pure = []string{
	"api/v1b1",
	"internal/apierror",
	"internal/cli/configdiff",
	"internal/cli/dashboardview",
	"internal/cli/offline",
	"internal/cli/scorefile",
	"internal/config/orchconfig",
	"internal/config/podrules",
	"internal/config/provisionermatch",
	"internal/config/runnable",
	"internal/controller/workerlimit",
	"internal/fleet/clusters",
	"internal/fleet/placement",
	"internal/objects/exposure",
	"internal/objects/health",
	"internal/objects/inventory",
	"internal/objects/prepare",
	"internal/planning/planner",
	"internal/planning/preview",
	"internal/planning/rollout",
	"internal/planning/selection",
	"internal/planning/values",
	"internal/provisioners/provisioning",
	"internal/provisioners/statesign",
	"internal/rendering/compose",
	"internal/rendering/helm",
	"internal/rendering/kustomize",
	"internal/rendering/render",
	"internal/shard",
	"internal/status/claimdecision",
	"internal/status/mirror",
	"internal/status/plandecision",
	"internal/status/why",
	"internal/status/workloaddecision",
	"internal/status/workloadstatus",
	"internal/templating/placeholder",
	"internal/templating/tplfuncs",
	"internal/templating/urltemplate",
	"internal/templating/yamltemplate",
	"internal/termtext",
}

// forbidden are the packages that reach a cluster, with the packages under them (client-go's
// kubernetes/scheme, which only registers types, is not under kubernetes/typed).
var forbidden = []string{
	"sigs.k8s.io/controller-runtime",
	"k8s.io/client-go/rest",
	"k8s.io/client-go/kubernetes/typed",
	"k8s.io/client-go/dynamic",
	"k8s.io/client-go/discovery",
	"k8s.io/client-go/tools/clientcmd",
}

// gateways are imports through which a forbidden package is reached but never used: Helm's
// chart loader and template engine (internal/rendering/helm) import client-go, the engine for its
// `lookup` function, which takes a cluster connection, and its version package for the
// Kubernetes version a chart is rendered for; the renderer gives them no connection and
// replaces lookup by a function that fails.
var gateways = []string{"helm.sh/helm/v4/"}

// TestImportRestrictions fails when a pure package depends, even indirectly, on a client: it
// walks each one's imports (`go list -deps`), not into the gateways, and names the chain that
// reaches a forbidden package.
func TestImportRestrictions(t *testing.T) {
	const module = "github.com/score-orchestrator/score-orchestrator/"
	args := []string{"-deps"}
	for _, p := range pure {
		args = append(args, "./"+p)
	}
	imports := goListImports(t, args...)
	isForbidden := func(path string) bool {
		if path == "k8s.io/client-go/kubernetes" { // the clientset
			return true
		}
		for _, f := range forbidden {
			if path == f || strings.HasPrefix(path, f+"/") {
				return true
			}
		}
		return false
	}
	for _, p := range pure {
		root := module + p
		if _, ok := imports[root]; !ok {
			t.Errorf("%s is not a package: update the list of pure packages here and in docs/architecture.md", p)
			continue
		}
		// Breadth first, remembering how each package was reached, to name the chain.
		from := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			if isForbidden(cur) {
				chain := []string{cur}
				for at := from[cur]; at != ""; at = from[at] {
					chain = append(chain, at)
				}
				slices.Reverse(chain)
				t.Errorf("%s depends on %s: %s", p, cur, strings.Join(chain, " → "))
				break
			}
			if slices.ContainsFunc(gateways, func(g string) bool { return strings.HasPrefix(cur, g) }) {
				continue
			}
			for _, next := range imports[cur] {
				if _, seen := from[next]; !seen {
					from[next] = cur
					queue = append(queue, next)
				}
			}
		}
	}
}

// TestShippedCommandsUseNoTestTooling fails when a command under cmd/, which holds what ships,
// depends, even indirectly, on the test tooling under internal/testing: a tool that needs it
// (the benchmark, for one) lives under hack/.
func TestShippedCommandsUseNoTestTooling(t *testing.T) {
	const tooling = "github.com/score-orchestrator/score-orchestrator/internal/testing"
	out, err := exec.Command("go", "list", "-deps", "./cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == tooling || strings.HasPrefix(dep, tooling+"/") {
			t.Errorf("a command under cmd/ depends on %s: move the command under hack/, or what it uses out of internal/testing", dep)
		}
	}
}

// areas are the folders under internal/, each on a floor: an area imports only areas on lower
// floors, and none on its own (docs/architecture.md draws them). A package directly under
// internal/ is shared, on the ground floor.
var areas = map[string]int{
	"templating":   1,
	"build":        1,
	"config":       2,
	"planning":     3,
	"objects":      3,
	"fleet":        4,
	"rendering":    4,
	"provisioners": 5,
	"status":       6,
	"controller":   7,
	"cli":          8,
	"testing":      9,
}

// TestAreasImportDownward fails when a package under internal/ imports one in an area on its
// own floor or above, or stands in a folder that is no area.
func TestAreasImportDownward(t *testing.T) {
	const internal = "github.com/score-orchestrator/score-orchestrator/internal/"
	area := func(path string) (string, int, bool) {
		rest := strings.TrimPrefix(path, internal)
		name, _, nested := strings.Cut(rest, "/")
		if !nested {
			return "shared", 0, true
		}
		floor, ok := areas[name]
		return name, floor, ok
	}
	for path, imps := range goListImports(t, "./internal/...") {
		from, floor, ok := area(path)
		if !ok {
			t.Errorf("%s stands in %s, which is no area: add it to areas here and to docs/architecture.md", path, from)
			continue
		}
		for _, imp := range imps {
			if !strings.HasPrefix(imp, internal) {
				continue
			}
			if to, toFloor, _ := area(imp); to != from && toFloor >= floor {
				t.Errorf("%s (%s, floor %d) imports %s (%s, floor %d): an area imports only lower floors", path, from, floor, imp, to, toFloor)
			}
		}
	}
}

// goListImports is `go list` of args: each package's import path and its imports.
func goListImports(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			return imports
		} else if err != nil {
			t.Fatal(err)
		}
		imports[p.ImportPath] = p.Imports
	}
}
