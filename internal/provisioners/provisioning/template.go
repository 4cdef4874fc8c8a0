// Package provisioning runs provisioner definitions in the score-k8s file format. The
// template:// strategy evaluates init, state, shared, outputs and manifests as Go templates
// with sprig and encodeSecretRef, over the same data score-k8s passes, so score-k8s
// provisioner files run unchanged. It is pure: the controller supplies the previous state
// and applies the result.
package provisioning

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// ServicePort is a port of another workload, as score-k8s's templates see it.
type ServicePort struct {
	Name       string
	Port       int
	TargetPort int
	Protocol   string
}

// NetworkService is how to reach a workload, as score-k8s's templates see it.
type NetworkService struct {
	ServiceName string
	Ports       map[string]ServicePort
}

// Data is what every template sees; the field names are score-k8s's.
type Data struct {
	Guid, Uid, Type, Class, Id string
	Params, Metadata           map[string]any
	Init, State, Shared        map[string]any
	SourceWorkload             string
	WorkloadMetadata           map[string]any
	WorkloadServices           map[string]NetworkService
	Namespace                  string
	// MountsDirectory and ComposeProjectName are what score-compose's templates see:
	// compose.MountsDirectory, the root of the definition's files, and the namespace, whose
	// network the Docker runtime runs the services on.
	MountsDirectory, ComposeProjectName string
	// Instance is the instance's identity hash (an addition to score-k8s's data): consumer
	// pods carry the label consumer.score.dev/<Instance>=true, for NetworkPolicies.
	Instance string
	// ConsumerNamespaces (an addition to score-k8s's data) is set for an instance the platform
	// shares across namespaces: a namespace selector (matchLabels, matchExpressions) admitting
	// exactly the namespaces whose claims share it, for the NetworkPolicy's namespaceSelector.
	ConsumerNamespaces map[string]any
}

// Result is what a provisioning run produced.
type Result struct {
	Init      map[string]any
	State     map[string]any
	Shared    map[string]any
	Outputs   map[string]any
	Manifests []map[string]any
	// Run is a runnable:// definition's stamped run (also its one manifest).
	Run *unstructured.Unstructured
}

// RenderTemplates evaluates a template:// definition over data: init, then state (with
// Init), then shared (merged into data.Shared), then outputs and manifests.
func RenderTemplates(def orchconfig.Provisioner, data Data) (Result, error) {
	return RenderTemplatesWith(nil, def, data)
}

// RenderTemplatesWith is RenderTemplates with overrides in place of functions of the
// provisioner set (scorectl render uses tplfuncs.Deterministic's random functions).
func RenderTemplatesWith(overrides template.FuncMap, def orchconfig.Provisioner, data Data) (Result, error) {
	funcs := overrides
	var r Result
	var err error
	if r.Init, err = renderMap(funcs, "init", def.Init, data); err != nil {
		return Result{}, err
	}
	data.Init = r.Init
	if r.State, err = renderMap(funcs, "state", def.State, data); err != nil {
		return Result{}, err
	}
	data.State = r.State
	if r.Shared, err = renderMap(funcs, "shared", def.Shared, data); err != nil {
		return Result{}, err
	}
	data.Shared = PatchMap(data.Shared, r.Shared)
	if r.Outputs, err = renderMap(funcs, "outputs", def.Outputs, data); err != nil {
		return Result{}, err
	}
	out, err := render(funcs, "manifests", def.Manifests, data)
	if err != nil {
		return Result{}, err
	}
	if def.EmitsCompose() {
		m, err := composeManifest(funcs, def, data)
		if err != nil {
			return Result{}, err
		}
		r.Manifests = append(r.Manifests, m)
	}
	if out != nil {
		list, ok := out.([]any)
		if !ok {
			return Result{}, yamltemplate.OutputErrorf("manifests template: must produce a list of objects")
		}
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				return Result{}, yamltemplate.OutputErrorf("manifests template: item %d is not an object", i)
			}
			r.Manifests = append(r.Manifests, m)
		}
		if err := CheckManifests(r.Manifests); err != nil {
			return Result{}, fmt.Errorf("manifests template: %w", err)
		}
	}
	return r, nil
}

// CheckManifests verifies that every manifest names its apiVersion and kind.
func CheckManifests(manifests []map[string]any) error {
	for i, m := range manifests {
		if m["apiVersion"] == nil || m["kind"] == nil {
			return yamltemplate.OutputErrorf("item %d has no apiVersion or kind", i)
		}
	}
	return nil
}

// RenderOutputs evaluates only the outputs template over data, as it is (strategies other
// than template:// keep their own state and pass it in data.State).
func RenderOutputs(def orchconfig.Provisioner, data Data) (map[string]any, error) {
	return renderMap(nil, "outputs", def.Outputs, data)
}

func renderMap(overrides template.FuncMap, name, text string, data Data) (map[string]any, error) {
	out, err := render(overrides, name, text, data)
	if err != nil || out == nil {
		return map[string]any{}, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, yamltemplate.OutputErrorf("%s template: must produce a mapping", name)
	}
	return m, nil
}

// render evaluates one template (parsed once and guarded, tplfuncs.ParseYAML) and decodes its
// output as YAML, each value it printed put back as a value (yamltemplate.Decode): whatever
// the data holds, it cannot add a key, an item or an object.
func render(overrides template.FuncMap, name, text string, data Data) (any, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	t, err := tplfuncs.ParseYAML(name, text, overrides)
	if err != nil {
		return nil, fmt.Errorf("%s template does not parse: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("%s template failed: %w", name, err)
	}
	out, err := yamltemplate.DecodeOne(b.Bytes())
	if err != nil {
		return nil, yamltemplate.OutputErrorf("%s template output is not YAML: %w", name, err)
	}
	return out, nil
}

// PatchMap merges patch into base (recursively for maps); a nil value deletes the key, as
// score-k8s's shared state does.
func PatchMap(base, patch map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = PatchMap(bm, pm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// ServiceOf is how score-k8s's templates see a Workload's network service: its name and its
// ports by name and, where not taken, by number.
func ServiceOf(name string, svc *scorev1b1.Service) NetworkService {
	ns := NetworkService{ServiceName: name, Ports: map[string]ServicePort{}}
	if svc == nil {
		return ns
	}
	for portName, p := range svc.Ports {
		target, protocol := p.Port, "TCP"
		if p.TargetPort != nil {
			target = *p.TargetPort
		}
		if p.Protocol != nil {
			protocol = *p.Protocol
		}
		ns.Ports[portName] = ServicePort{Name: portName, Port: int(p.Port), TargetPort: int(target), Protocol: protocol}
	}
	for _, p := range ns.Ports {
		if _, taken := ns.Ports[strconv.Itoa(p.Port)]; !taken {
			ns.Ports[strconv.Itoa(p.Port)] = p
		}
	}
	return ns
}
