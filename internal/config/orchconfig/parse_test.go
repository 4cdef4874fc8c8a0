package orchconfig

import (
	"errors"
	"strings"
	"testing"
)

const parseBase = `apiVersion: score.dev/v1b1
kind: OrchestratorConfig
profiles:
  - name: web-service
    backends:
      - backendId: k8s-web
        runtimeClass: kubernetes
        version: 1.0.0
        template:
          kind: manifests
          ref: configmap://score-system/templates/web.yaml
          digest: sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
`

func TestParse(t *testing.T) {
	cases := []struct {
		name     string
		doc      string
		wantLine int
		wantMsg  string
	}{
		{"valid", parseBase, 0, ""},
		{"empty document", "", 0, "the document is empty"},
		{"syntax error", parseBase + "defaults: profile: web\n", 13, "not valid YAML"},
		{"unknown top-level field", parseBase + "profile: web\n", 13, `unknown field "profile"`},
		{"unknown nested field", strings.Replace(parseBase, "        version: 1.0.0\n", "        version: 1.0.0\n        weight: 3\n", 1), 9, `unknown field "weight"`},
		{"wrong type", strings.Replace(parseBase, "version: 1.0.0\n", "version: 1.0.0\n        priority: high\n", 1), 9, "expected an integer"},
		{"validation error points at its line", strings.Replace(parseBase, "version: 1.0.0", "version: latest", 1), 8, "SemVer"},
		{"validation error on a nested field", strings.Replace(parseBase, "kind: manifests", "kind: jsonnet", 1), 10, "template kind"},
		{"two documents", parseBase + "---\n" + parseBase, 13, "exactly one YAML document"},
		{"a second default class points at its line", parseBase + `classes:
  - {type: postgres, name: standard, default: true}
  - type: postgres
    name: ha
    default: true
`, 17, "already has a default class"},
		// Found by FuzzParse: errors that must carry a line too.
		{"unterminated quote", parseBase + "defaults:\n  profile: \"web\n", 14, "unexpected end of stream"},
		{"duplicate key", parseBase + "kind: OrchestratorConfig\n", 13, `mapping key "kind" already defined at line 2`},
		{"a second document that is not YAML", parseBase + "---\n\tx\n", 14, "cannot start any token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.doc))
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Profiles[0].Backends[0].Template.Kind != "manifests" {
					t.Fatalf("decoded wrongly: %+v", cfg)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("want an InvalidError, got %v", err)
			}
			if cfg != nil {
				t.Fatal("an invalid document must not return a config")
			}
			for _, fe := range inv.Errors {
				if strings.Contains(fe.Message, tc.wantMsg) {
					if fe.Line != tc.wantLine {
						t.Fatalf("want line %d, got %d (%s)", tc.wantLine, fe.Line, fe)
					}
					return
				}
			}
			t.Fatalf("want an error containing %q, got %v", tc.wantMsg, err)
		})
	}
}

func TestParseRef(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0", 64)
	cases := []struct {
		in      string
		want    Ref
		wantErr string
	}{
		{in: "oci://ghcr.io/org/tpl@" + digest, want: Ref{Scheme: RefOCI, Repository: "ghcr.io/org/tpl", Digest: digest}},
		{in: "oci://localhost:5000/org/tpl:1.0@" + digest, want: Ref{Scheme: RefOCI, Repository: "localhost:5000/org/tpl", Tag: "1.0", Digest: digest}},
		{in: "oci://localhost:5000/org/tpl", want: Ref{Scheme: RefOCI, Repository: "localhost:5000/org/tpl"}},
		{in: "configmap://score-system/templates", want: Ref{Scheme: RefConfigMap, Namespace: "score-system", Name: "templates"}},
		{in: "configmap://score-system/templates/web.yaml", want: Ref{Scheme: RefConfigMap, Namespace: "score-system", Name: "templates", Key: "web.yaml"}},
		{in: "oci://Upper/Case", wantErr: "lower case"},
		{in: "oci://host/repo:bad tag", wantErr: "not a valid OCI tag"},
		{in: "configmap://NS/x", wantErr: "not a valid namespace"},
		{in: "configmap://ns/x/k/extra", wantErr: "configmap://<namespace>/<name>"},
		{in: "https://example.com/x", wantErr: "unknown scheme"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRef(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("want %+v, got %+v", tc.want, got)
			}
		})
	}
}
