package compose

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func str(s string) *string { return &s }

// plan builds a plan spec of one container "web" with the given values and projection.
func plan(values map[string]any, web scorev1b1.ContainerProjection, claims ...scorev1b1.PlanClaim) *scorev1b1.WorkloadPlanSpec {
	raw, _ := json.Marshal(values)
	web.Name = "web"
	return &scorev1b1.WorkloadPlanSpec{
		RuntimeClass: scorev1b1.RuntimeClassDocker,
		Values:       &apiextensionsv1.JSON{Raw: raw},
		Projection:   scorev1b1.Projection{Containers: []scorev1b1.ContainerProjection{web}},
		Claims:       claims,
	}
}

var dbClaim = scorev1b1.PlanClaim{Key: "db", ClaimName: "web-db", SecretName: "web-db-outputs", SecretKeys: []string{"password"}}

func values(extra map[string]any) map[string]any {
	web := map[string]any{"image": "local/hello:1"}
	for k, v := range extra {
		web[k] = v
	}
	return map[string]any{
		"containers": map[string]any{"web": web},
		"service":    map[string]any{"ports": map[string]any{"http": map[string]any{"port": 80, "targetPort": 8080}}},
		"resources":  map[string]any{"db": map[string]any{"outputs": map[string]any{"host": "db.internal", "port": 5432}}},
	}
}

func secrets(ref scorev1b1.OutputRef) (string, error) {
	if ref.ClaimKey == "db" && ref.OutputKey == "password" {
		return "s3cret", nil
	}
	return "", errors.New("no such secret output")
}

func TestFromPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    *scorev1b1.WorkloadPlanSpec
		check   func(t *testing.T, p Project)
		wantErr string
	}{
		{
			name: "variables: a literal (kept as written), plain output, secret output, composed with both",
			spec: plan(values(nil), scorev1b1.ContainerProjection{Env: []scorev1b1.EnvProjection{
				{Name: "GREETING", ValueProjection: scorev1b1.ValueProjection{Value: str("hello $(NOT_A_VAR) $$(x)")}},
				{Name: "DB_HOST", ValueProjection: scorev1b1.ValueProjection{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}},
				{Name: "DB_PASSWORD", ValueProjection: scorev1b1.ValueProjection{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}}},
				{Name: "DB_URL", ValueProjection: scorev1b1.ValueProjection{Parts: []scorev1b1.ValuePart{
					{Literal: str("postgres://app:")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}},
					{Literal: str("@")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}}}},
			}}, dbClaim),
			check: func(t *testing.T, p Project) {
				want := []string{"DB_HOST=db.internal", "DB_PASSWORD=s3cret", "DB_URL=postgres://app:s3cret@db.internal", "GREETING=hello $(NOT_A_VAR) $$(x)"}
				got := slices.Clone(p.Containers[0].Env)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("env %q, want %q", got, want)
				}
			},
		},
		{
			name: "command and args with a secret part",
			spec: plan(values(nil), scorev1b1.ContainerProjection{
				Command: []scorev1b1.ValueProjection{{Value: str("/server")}},
				Args:    []scorev1b1.ValueProjection{{Parts: []scorev1b1.ValuePart{{Literal: str("--password=")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}}}}},
			}, dbClaim),
			check: func(t *testing.T, p Project) {
				c := p.Containers[0]
				if !slices.Equal(c.Entrypoint, []string{"/server"}) || !slices.Equal(c.Cmd, []string{"--password=s3cret"}) {
					t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
				}
				for _, e := range c.Env {
					if strings.HasPrefix(e, "SCORE_SECRET_") {
						t.Errorf("a helper variable reached the container: %s", e)
					}
				}
			},
		},
		{
			name: "files: text with an output, a secret file, binary, with modes",
			spec: plan(values(nil), scorev1b1.ContainerProjection{Files: []scorev1b1.FileProjection{
				{Target: "/etc/app/config.yaml", Parts: []scorev1b1.ValuePart{{Literal: str("host: ")}, {From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "host"}}}},
				{Target: "/etc/app/secret", Mode: str("0600"), Secret: true, Parts: []scorev1b1.ValuePart{{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}}}},
				{Target: "/bin/blob", BinaryContent: str("AAEC")},
			}}, dbClaim),
			check: func(t *testing.T, p Project) {
				files := p.Containers[0].Files
				if len(files) != 3 {
					t.Fatalf("files %+v", files)
				}
				want := []File{
					{Target: "/bin/blob", Mode: 0o644, Content: []byte{0, 1, 2}},
					{Target: "/etc/app/config.yaml", Mode: 0o644, Content: []byte("host: db.internal")},
					{Target: "/etc/app/secret", Mode: 0o600, Content: []byte("s3cret"), Secret: true},
				}
				for i := range want {
					if files[i].Target != want[i].Target || files[i].Mode != want[i].Mode || string(files[i].Content) != string(want[i].Content) || files[i].Secret != want[i].Secret {
						t.Errorf("file %d: %+v, want %+v", i, files[i], want[i])
					}
				}
			},
		},
		{
			name: "limits, readiness and ports",
			spec: plan(values(map[string]any{
				"resources":      map[string]any{"limits": map[string]any{"memory": "64Mi", "cpu": "250m"}, "requests": map[string]any{"cpu": "1"}},
				"readinessProbe": map[string]any{"httpGet": map[string]any{"port": 8080, "path": "/ready"}},
			}), scorev1b1.ContainerProjection{}),
			check: func(t *testing.T, p Project) {
				c := p.Containers[0]
				if c.Memory != 64<<20 || c.NanoCPUs != 250_000_000 {
					t.Errorf("memory %d nanoCPUs %d", c.Memory, c.NanoCPUs)
				}
				if c.Ready == nil || *c.Ready != (HTTPProbe{Port: 8080, Path: "/ready", Scheme: "http"}) {
					t.Errorf("ready %+v", c.Ready)
				}
				if !slices.Equal(p.Ports, []Port{{Name: "http", TargetPort: 8080, Protocol: "tcp"}}) {
					t.Errorf("ports %+v", p.Ports)
				}
			},
		},
		{
			name:    "a volume is refused with its target",
			spec:    plan(values(nil), scorev1b1.ContainerProjection{Volumes: []scorev1b1.VolumeProjection{{Target: "/data", Source: str("data")}}}),
			wantErr: "volume /data: the docker runtime mounts files, not volumes",
		},
		{
			name:    "a secret output that cannot be read stops the project",
			spec:    plan(values(nil), scorev1b1.ContainerProjection{Env: []scorev1b1.EnvProjection{{Name: "K", ValueProjection: scorev1b1.ValueProjection{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "token"}}}}}, scorev1b1.PlanClaim{Key: "db", SecretName: "s", SecretKeys: []string{"token"}}),
			wantErr: "variable K: no such secret output",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FromPlan("web", tc.spec, secrets)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

// The hash names a version: the same plan gives the same hash; a rotated secret a new one,
// without the secret in it.
func TestHashFollowsContentNotSecrets(t *testing.T) {
	spec := plan(values(nil), scorev1b1.ContainerProjection{Env: []scorev1b1.EnvProjection{{Name: "P", ValueProjection: scorev1b1.ValueProjection{From: &scorev1b1.OutputRef{ClaimKey: "db", OutputKey: "password"}}}}}, dbClaim)
	a, _ := FromPlan("web", spec, secrets)
	b, _ := FromPlan("web", spec, secrets)
	rotated, _ := FromPlan("web", spec, func(scorev1b1.OutputRef) (string, error) { return "rotated", nil })
	if a.Hash != b.Hash || a.Hash == rotated.Hash {
		t.Errorf("hashes %s %s %s", a.Hash, b.Hash, rotated.Hash)
	}
	if strings.Contains(a.Hash, "s3cret") {
		t.Error("the hash carries the secret")
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	for in, want := range map[string]string{
		"plain":        "plain",
		"$(A)-$(B)":    "1-two",
		"$$(A)":        "$(A)",
		"$(C)":         "$(C)",
		"$(A":          "$(A",
		"cost $5 $(A)": "cost $5 1",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// An alias replaces the image, and the version with it.
func TestAlias(t *testing.T) {
	p, err := FromPlan("web", plan(values(nil), scorev1b1.ContainerProjection{}), secrets)
	if err != nil {
		t.Fatal(err)
	}
	before := p.Hash
	p.Alias(map[string]string{"other:1": "x"})
	if p.Containers[0].Image != "local/hello:1" || p.Hash != before {
		t.Errorf("an alias of another image changed %s, %s", p.Containers[0].Image, p.Hash)
	}
	p.Alias(map[string]string{"local/hello:1": "mirror.local/hello:1"})
	if p.Containers[0].Image != "mirror.local/hello:1" || p.Hash == before {
		t.Errorf("image %s, hash %s (before %s)", p.Containers[0].Image, p.Hash, before)
	}
}
