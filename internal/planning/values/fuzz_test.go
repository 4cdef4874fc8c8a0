package values

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// FuzzCompose builds layers from JSON and checks what composition promises: the inputs stay
// as they were; the result shares nothing with them (changing it changes no layer); it is the
// left fold of a two-layer merge; every key of the right-most layer has its value (maps
// merged, anything else replaced); and no key comes from nowhere.
func FuzzCompose(f *testing.F) {
	f.Add(`{"a":1}`, `{"a":{"b":2}}`, `{"a":{"c":[1,2]}}`)
	f.Add(`{}`, `{"x":null}`, `{"x":"y"}`)
	f.Add(`{"s":{"t":{"u":1}}}`, `{"s":{"t":{"v":2}}}`, `{"s":"flat"}`)
	f.Add(`{"l":[{"m":{"n":1}}]}`, `{"replicas":2,"expose":{"ingress":{"domain":"a"}}}`, `{"workload":{"name":"w","labels":{}}}`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var layers []map[string]any
		for _, s := range []string{a, b, c} {
			var m map[string]any
			if json.Unmarshal([]byte(s), &m) != nil {
				return
			}
			layers = append(layers, m)
		}
		before, _ := json.Marshal(layers)
		out := Compose(layers...)
		if after, _ := json.Marshal(layers); string(before) != string(after) {
			t.Fatalf("inputs changed")
		}
		if fold := Compose(Compose(layers[0], layers[1]), layers[2]); !reflect.DeepEqual(out, fold) {
			t.Fatalf("Compose(a, b, c) = %v, Compose(Compose(a, b), c) = %v", out, fold)
		}
		checkRightWins(t, "", out, layers)

		scribble(out)
		if after, _ := json.Marshal(layers); string(before) != string(after) {
			t.Fatalf("the result shares maps or lists with its inputs")
		}
	})
}

// checkRightWins checks one level of a composition: a key's value is the right-most layer's
// when that is not a map, the merge of the maps after the last non-map otherwise.
func checkRightWins(t *testing.T, path string, out map[string]any, layers []map[string]any) {
	t.Helper()
	for k, v := range out {
		var maps []map[string]any
		var last any
		found := false
		for _, l := range layers {
			lv, ok := l[k]
			if !ok {
				continue
			}
			found, last = true, lv
			if m, isMap := lv.(map[string]any); isMap {
				maps = append(maps, m)
			} else {
				maps = nil
			}
		}
		switch {
		case !found:
			t.Fatalf("%s.%s: in the result, in no layer", path, k)
		case len(maps) == 0:
			if !reflect.DeepEqual(v, last) {
				t.Fatalf("%s.%s: the right-most value %v must win, got %v", path, k, last, v)
			}
		default:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%s.%s: maps compose to a map, got %v", path, k, v)
			}
			checkRightWins(t, path+"."+k, m, maps)
		}
	}
	for _, l := range layers {
		for k := range l {
			if _, ok := out[k]; !ok {
				t.Fatalf("%s.%s: in a layer, not in the result", path, k)
			}
		}
	}
}

// scribble changes every map and list inside v.
func scribble(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			scribble(e)
			x[k+"~"] = "scribbled"
		}
	case []any:
		for i, e := range x {
			scribble(e)
			x[i] = "scribbled"
		}
	}
}

// FuzzNormalize decodes a Workload spec from JSON and checks the values it becomes: they
// encode as JSON; nothing that may hold a placeholder (command, args, variables, files,
// volumes) is in them; an image "." is left out; every port has a protocol and a target
// port; the converter's bookkeeping annotations are dropped; and Normalize is a function.
func FuzzNormalize(f *testing.F) {
	f.Add(`{"containers":{"main":{"image":"nginx","command":["/app"],"args":["${resources.db.host}"],"variables":{"A":"${metadata.name}"},"files":{"/etc/x":{"content":"x"}},"volumes":{"/data":{"source":"${resources.v}"}}}},"service":{"ports":{"web":{"port":80}}}}`, "score.dev/profile", "web-service")
	f.Add(`{"containers":{"main":{"image":".","resources":{"limits":{"cpu":"1"}},"livenessProbe":{"httpGet":{"path":"/","port":8080}},"before":{"init":{"ready":"complete"}}},"init":{"image":"busybox"}},"service":{"ports":{"dns":{"port":53,"targetPort":5353,"protocol":"UDP"}}}}`, scorev1b1.AnnotationScoreMetadata, `{"owner":"a"}`)
	f.Fuzz(func(t *testing.T, spec, annotationKey, annotationValue string) {
		w := &scorev1b1.Workload{}
		if json.Unmarshal([]byte(spec), &w.Spec) != nil {
			return
		}
		w.Name, w.Namespace = "web", "ns"
		w.Annotations = map[string]string{annotationKey: annotationValue, scorev1b1.AnnotationFileSources: `{"main:/etc/x":"x.conf"}`}
		out := Normalize(w)
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("the values do not encode: %v", err)
		}
		if again, _ := json.Marshal(Normalize(w)); string(again) != string(b) {
			t.Fatalf("Normalize is not a function:\n%s\n%s", b, again)
		}
		for name, c := range out["containers"].(map[string]any) {
			cm := c.(map[string]any)
			for _, k := range []string{"command", "args", "variables", "files", "volumes"} {
				if _, ok := cm[k]; ok {
					t.Fatalf("containers.%s.%s is in the values; it travels in the projection", name, k)
				}
			}
			if img, ok := cm["image"]; ok && img == "." {
				t.Fatalf("containers.%s.image \".\" is in the values", name)
			}
		}
		if svc, ok := out["service"].(map[string]any); ok {
			for name, p := range svc["ports"].(map[string]any) {
				pm := p.(map[string]any)
				if pm["targetPort"] == nil || pm["protocol"] == nil {
					t.Fatalf("service.ports.%s lacks a default: %v", name, pm)
				}
			}
		}
		anns := out["workload"].(map[string]any)["annotations"].(map[string]any)
		for k := range anns {
			if k == scorev1b1.AnnotationScoreMetadata || k == scorev1b1.AnnotationFileSources || strings.HasPrefix(k, "kubectl.kubernetes.io/last-applied") {
				t.Fatalf("bookkeeping annotation %s is in the values", k)
			}
		}
	})
}
