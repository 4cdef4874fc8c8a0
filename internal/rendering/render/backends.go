package render

import (
	"encoding/json"
	"fmt"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/helm"
	"github.com/score-orchestrator/score-orchestrator/internal/rendering/kustomize"
)

// ValuesKeyScore is the chart value under which a helm template finds the plan's data
// (workload, labels, selector, podSpec, ports, inputHash). It overrides a plan value of the
// same name.
const ValuesKeyScore = "score"

// ValuesKeyKustomize is the plan value (usually set in the backend's template values) whose
// namePrefix and nameSuffix override a kustomize template's default name prefix
// "<workload>-".
const ValuesKeyKustomize = "kustomize"

// renderHelm renders a chart with the plan's values as chart values (over the chart's
// values.yaml) and the plan's data under ValuesKeyScore. The release is named after the
// Workload, in its namespace.
func renderHelm(in Input, d data) ([]byte, error) {
	score, err := plain(map[string]any{
		"workload":  map[string]any{"name": d.workload, "namespace": d.namespace},
		"labels":    d.labels,
		"selector":  d.selector,
		"podSpec":   d.podSpec,
		"ports":     d.ports,
		"inputHash": d.inputHash,
	})
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	for k, v := range d.values {
		values[k] = v
	}
	values[ValuesKeyScore] = score
	return helm.Render(helm.Input{Chart: in.Template.Data, ReleaseName: d.workload, Namespace: d.namespace, Values: values})
}

// renderKustomize builds a kustomization with the runtime's overlay: the Workload's
// namespace; the name prefix "<workload>-" (or the plan's kustomize.namePrefix and
// kustomize.nameSuffix); score.dev/workload on every object and selector and the other
// labels on every object; each container's image by the container's name; the projected pod
// merged into the objects annotated score.dev/pod: workload; and the values files, whose
// ScoreValues object carries the workload's name, namespace, inputHash and ports (the
// Service ports list) beside the values.
func renderKustomize(in Input, d data) ([]byte, error) {
	prefix, suffix := d.workload+"-", ""
	if k, ok := d.values[ValuesKeyKustomize].(map[string]any); ok {
		if p, ok := k["namePrefix"]; ok {
			if prefix, ok = p.(string); !ok {
				return nil, fmt.Errorf("the value kustomize.namePrefix must be a string")
			}
		}
		if s, ok := k["nameSuffix"]; ok {
			if suffix, ok = s.(string); !ok {
				return nil, fmt.Errorf("the value kustomize.nameSuffix must be a string")
			}
		}
	}
	pod, err := plain(d.podSpec)
	if err != nil {
		return nil, err
	}
	workload, err := plain(map[string]any{"name": d.workload, "namespace": d.namespace, "inputHash": d.inputHash, "ports": d.ports})
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range d.labels {
		if _, selects := d.selector[k]; !selects {
			labels[k] = fmt.Sprint(v)
		}
	}
	var images []kustomize.Image
	for _, list := range [][]map[string]any{d.pod.InitContainers, d.pod.Containers} {
		for _, c := range list {
			name, _ := c["name"].(string)
			ref, _ := c["image"].(string)
			if name != "" && ref != "" {
				images = append(images, imageOf(name, ref))
			}
		}
	}
	return kustomize.Render(kustomize.Input{
		Files:          in.Template.Files,
		Namespace:      d.namespace,
		NamePrefix:     prefix,
		NameSuffix:     suffix,
		SelectorLabels: map[string]string{scorev1b1.LabelWorkload: d.workload},
		Labels:         labels,
		Images:         images,
		Pod:            pod,
		Values:         d.values,
		Workload:       workload,
	})
}

// imageOf splits an image reference into kustomize's images fields.
func imageOf(name, ref string) kustomize.Image {
	im := kustomize.Image{Name: name}
	if repo, digest, ok := strings.Cut(ref, "@"); ok {
		ref, im.Digest = repo, digest
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref, im.NewTag = ref[:i], ref[i+1:]
	}
	im.NewName = ref
	return im
}

// plain turns typed data into the maps and slices of decoded JSON, which is what Helm's value
// coalescing and kustomize's YAML handling expect.
func plain(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}
