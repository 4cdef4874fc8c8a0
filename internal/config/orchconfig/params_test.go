package orchconfig

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSupportedParamsTakeBothForms(t *testing.T) {
	doc := "supported_params:\n  - path\n  - {name: size, type: quantity}\n  - name: tier\n    pattern: \"^(gold|silver)$\"\n    maxLength: 6\n"
	var p Provisioner
	if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	want := []Param{{Name: "path"}, {Name: "size", Type: "quantity"}, {Name: "tier", Pattern: "^(gold|silver)$", MaxLength: 6}}
	if len(p.SupportedParams) != 3 || p.SupportedParams[0] != want[0] || p.SupportedParams[1] != want[1] || p.SupportedParams[2] != want[2] {
		t.Fatalf("got %#v", p.SupportedParams)
	}
	raw, err := json.Marshal(p.SupportedParams)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `["path",{"name":"size","type":"quantity"},{"name":"tier","pattern":"^(gold|silver)$","maxLength":6}]` {
		t.Errorf("JSON: %s", raw)
	}
	var back []Param
	if err := json.Unmarshal(raw, &back); err != nil || len(back) != 3 || back[1] != want[1] {
		t.Errorf("JSON round trip: %v %#v", err, back)
	}
	if err := yaml.Unmarshal([]byte("supported_params: [{name: a, kind: x}]"), &p); err == nil || !strings.Contains(err.Error(), "field kind not found") {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestCheckParams(t *testing.T) {
	def := Provisioner{SupportedParams: []Param{
		{Name: "free"}, {Name: "size", Type: "quantity"}, {Name: "port", Type: "port"}, {Name: "target", Type: "servicePort"},
		{Name: "host", Type: "dnsName"}, {Name: "label", Type: "dnsLabel"}, {Name: "path", Type: "urlPath"},
		{Name: "n", Type: "integer"}, {Name: "on", Type: "boolean"}, {Name: "s", Type: "string", MaxLength: 5},
		{Name: "tier", Pattern: "^(gold|silver)$"},
	}}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string // "" when admitted
	}{
		{"what every type admits", map[string]any{"free": "a: b\n- c", "size": "1Gi", "port": float64(8080), "target": "http", "host": "app.example.com",
			"label": "web", "path": "/api/v1", "n": "3", "on": true, "s": "abcde", "tier": "gold"}, ""},
		{"a number is a quantity", map[string]any{"size": float64(10)}, ""},
		{"a port by number", map[string]any{"target": float64(443)}, ""},
		{"the volume injection", map[string]any{"size": "1Gi}}\n- apiVersion: v1"}, `params.size must be a Kubernetes quantity such as 1Gi or 500m, not "1Gi}}\n- apiVersion: v1"`},
		{"port out of range", map[string]any{"port": float64(70000)}, "params.port must be a port number"},
		{"port as text", map[string]any{"port": "http"}, "params.port must be a port number"},
		{"service port name too long", map[string]any{"target": "a-very-long-port-name"}, "params.target must be a port number from 1 to 65535 or a port name"},
		{"host with a path", map[string]any{"host": "app.example.com/x"}, "params.host must be a lower-case DNS name"},
		{"host in capitals", map[string]any{"host": "App.example.com"}, "params.host must be a lower-case DNS name"},
		{"label with a dot", map[string]any{"label": "a.b"}, "params.label must be a DNS label"},
		{"path with a query", map[string]any{"path": "/a?b=c"}, "params.path must be a URL path"},
		{"path with a dot-segment", map[string]any{"path": "/a/../b"}, "params.path must be a URL path"},
		{"path with a secret marker is a path", map[string]any{"path": "/🔐💬s_k💬🔐"}, ""},
		{"path with a newline", map[string]any{"path": "/a\nb"}, "params.path must be a URL path"},
		{"a fraction is not an integer", map[string]any{"n": 1.5}, "params.n must be an integer"},
		{"text is not a boolean", map[string]any{"on": "true"}, "params.on must be true or false"},
		{"a number is not a string", map[string]any{"s": float64(1)}, "params.s must be a string"},
		{"too long", map[string]any{"s": "abcdef"}, "params.s must be at most 5 bytes long"},
		{"pattern", map[string]any{"tier": "bronze"}, "params.tier must be a value that matches ^(gold|silver)$"},
		{"the first refused by name", map[string]any{"tier": "x", "host": "X"}, "params.host"},
		{"a long value is cut", map[string]any{"label": strings.Repeat("x", 100)}, `, not "` + strings.Repeat("x", 61) + `..."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := def.CheckParams(tc.params)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParamRulesAreValidated(t *testing.T) {
	for _, tc := range []struct {
		param Param
		want  string
	}{
		{Param{Name: ""}, "must name a param"},
		{Param{Name: "a", Type: "url"}, `"url" is not a param type`},
		{Param{Name: "a", Pattern: "("}, "does not compile"},
		{Param{Name: "a", MaxLength: -1}, "must not be negative"},
	} {
		cfg := validConfig()
		cfg.Provisioners[0].SupportedParams = []Param{tc.param}
		errs := Validate(cfg)
		if len(errs) == 0 || !strings.Contains(errs[0].Message, tc.want) || !strings.HasPrefix(errs[0].Path, "provisioners[0].supported_params[0]") {
			t.Errorf("%+v: got %v, want %q", tc.param, errs, tc.want)
		}
	}
	cfg := validConfig()
	cfg.Provisioners[0].SupportedParams = []Param{{Name: "a"}, {Name: "a"}}
	if errs := Validate(cfg); len(errs) == 0 || !strings.Contains(errs[0].Message, "listed twice") {
		t.Errorf("a param listed twice: %v", errs)
	}
}

// A template whose own text holds the token marker cannot be guarded: the config refuses it,
// rather than every claim failing later.
func TestATemplateHoldingTheTokenMarkerIsRefused(t *testing.T) {
	cfg := validConfig()
	cfg.Provisioners[0].Outputs = "KEY: q7zscorevvz"
	errs := Validate(cfg)
	if len(errs) == 0 || errs[0].Path != "provisioners[0].outputs" || !strings.Contains(errs[0].Message, "marks printed values") {
		t.Fatalf("got %v", errs)
	}
}
