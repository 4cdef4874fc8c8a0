package provisioning

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/conformance"
	"sigs.k8s.io/yaml"
)

func TestRenderTemplates(t *testing.T) {
	def := orchconfig.Provisioner{
		URI: "template://t/postgres", Type: "postgres",
		Init:    "password: {{ randAlphaNum 16 | quote }}\nuser: app",
		State:   "password: {{ dig \"password\" .Init.password .State | quote }}\nservice: pg-{{ substr 0 8 .Guid }}",
		Shared:  "instances:\n  {{ .Guid }}: true",
		Outputs: "host: {{ .State.service }}\nport: 5432\npassword: {{ encodeSecretRef .State.service \"password\" }}\nurl: postgres://app:{{ encodeSecretRef .State.service \"password\" }}@{{ .State.service }}",
		Manifests: `- apiVersion: v1
  kind: Secret
  metadata: {name: {{ .State.service }}}
  data: {password: {{ .State.password | b64enc }}}`,
	}
	id := NewIdentity("ns", "web", "db", "postgres", "", "")
	first, err := RenderTemplates(def, Data{Guid: id.Guid(), Uid: id.Uid(), Type: "postgres", Class: id.Class, Id: id.ID, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	// The second run sees the first run's state: the password stays.
	second, err := renderInRun(def, Data{Guid: id.Guid(), Uid: id.Uid(), Type: "postgres", State: first.State, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if first.State["password"] != second.State["password"] || len(first.State["password"].(string)) != 16 {
		t.Fatalf("state must be stable: %v vs %v", first.State, second.State)
	}
	plain, secret, err := SplitOutputs(second.Outputs, lookupIn(SecretsInManifests(second.Manifests)))
	if err != nil {
		t.Fatal(err)
	}
	if plain["port"] != 5432 || plain["host"] != first.State["service"] || plain["password"] != nil {
		t.Fatalf("plain %v", plain)
	}
	if secret["password"] != first.State["password"] || !strings.HasPrefix(secret["url"], "postgres://app:"+first.State["password"].(string)+"@pg-") {
		t.Fatalf("secret %v", secret)
	}
	if got := MissingOutputs([]string{"host", "password", "database"}, plain, secret); len(got) != 1 || got[0] != "database" {
		t.Fatalf("missing %v", got)
	}
}

// renderInRun renders def as a run does: the references its templates make are the run's,
// which SplitOutputs resolves.
func renderInRun(def orchconfig.Provisioner, data Data) (Result, error) {
	return RenderTemplates(withMadeReferences(def), data)
}

func lookupIn(m map[SecretRef]string) func(SecretRef) (string, error) {
	return func(r SecretRef) (string, error) {
		if v, ok := m[r]; ok {
			return v, nil
		}
		return "", errors.New("no such secret")
	}
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name string
		def  orchconfig.Provisioner
		want string
	}{
		{"init not a mapping", orchconfig.Provisioner{Init: "- a"}, "init template: must produce a mapping"},
		{"manifests not a list", orchconfig.Provisioner{Manifests: "a: b"}, "must produce a list"},
		{"manifest without kind", orchconfig.Provisioner{Manifests: "- metadata: {name: x}"}, "no apiVersion or kind"},
		{"template fails", orchconfig.Provisioner{Outputs: `{{ fail "no capacity" }}`}, "no capacity"},
		{"output not YAML", orchconfig.Provisioner{Outputs: "a: [b"}, "not YAML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderTemplates(tc.def, Data{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

func TestIdentity(t *testing.T) {
	own := NewIdentity("ns", "web", "db", "postgres", "", "")
	if own.Uid() != "postgres.default#web.db" || own.Shared {
		t.Fatalf("uid %s", own.Uid())
	}
	shared := NewIdentity("ns", "web", "db", "postgres", "", "main")
	if shared.Uid() != "postgres.default#main" || !shared.Shared {
		t.Fatalf("uid %s", shared.Uid())
	}
	other := NewIdentity("ns", "api", "database", "postgres", "", "main")
	if other.Guid() != shared.Guid() || other.StateSecretName() != shared.StateSecretName() {
		t.Fatal("two claims of one shared id must be one instance")
	}
	if NewIdentity("ns2", "api", "database", "postgres", "", "main").Guid() == shared.Guid() {
		t.Fatal("another namespace is another instance")
	}
	if g := own.Guid(); len(g) != 36 || g[14] != '4' {
		t.Fatalf("guid %s", g)
	}
}

// Every provisioner file of the conformance corpus loads into a valid config.
func TestConformanceProvisionersLoad(t *testing.T) {
	conformance.Require(t)
	files, err := conformance.ProvisionerFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f[strings.LastIndex(f, "/")+1:], func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var provs []map[string]any
			if err := yaml.Unmarshal(data, &provs); err != nil {
				t.Fatal(err)
			}
			doc := map[string]any{
				"apiVersion": "score.dev/v1b1", "kind": "OrchestratorConfig", "allowMutableRefs": true,
				"profiles":     []any{map[string]any{"name": "p", "backends": []any{map[string]any{"backendId": "b", "runtimeClass": "kubernetes", "version": "1.0.0", "template": map[string]any{"kind": "manifests", "ref": "configmap://ns/t"}}}}},
				"provisioners": provs,
			}
			raw, _ := yaml.Marshal(doc)
			if _, err := orchconfig.Parse(raw); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An instance on a member cluster is another instance than the same identity on the hub or on
// another member: its own digest, guid and state. The hub's stay those of a single-cluster
// install.
func TestIdentityPerCluster(t *testing.T) {
	hub := NewIdentity("team", "web", "db", "postgres", "", "shared-db")
	sum := sha256.Sum256([]byte("team/postgres.default#shared-db"))
	if want := hex.EncodeToString(sum[:])[:16]; hub.Hash() != want {
		t.Fatalf("the hub's hash %q changed from a single-cluster install's %q", hub.Hash(), want)
	}
	eu, us := hub, hub
	eu.Cluster, us.Cluster = "eu", "us"
	seen := map[string]string{}
	for name, id := range map[string]Identity{"hub": hub, "eu": eu, "us": us} {
		for _, v := range []string{id.Hash(), id.Guid(), id.StateSecretName()} {
			if other, dup := seen[v]; dup {
				t.Fatalf("%s and %s share %q", name, other, v)
			}
			seen[v] = name
		}
	}
	if eu.Uid() != hub.Uid() {
		t.Fatalf("the resource uid is the same everywhere: %q %q", eu.Uid(), hub.Uid())
	}
}

// A resource's named id can never reach the instance another Workload's resource owns without
// an id: the derived id "<workload>.<key>" and a typed id of the same text are two instances
// (otherwise `id: owner.db` binds to the Workload owner's private database).
func TestNamedIDCannotReachADerivedIdentity(t *testing.T) {
	private := NewIdentity("team", "owner", "db", "postgres", "", "")
	typed := NewIdentity("team", "thief", "xx", "postgres", "", "owner.db")
	if private.Uid() != typed.Uid() {
		t.Fatalf("the score-k8s uids are the same text (%q, %q); this test needs them to be", private.Uid(), typed.Uid())
	}
	for name, pair := range map[string][2]string{
		"hash":  {private.Hash(), typed.Hash()},
		"guid":  {private.Guid(), typed.Guid()},
		"state": {private.StateSecretName(), typed.StateSecretName()},
	} {
		if pair[0] == pair[1] {
			t.Errorf("the %s of a typed id equals a Workload's private instance's: %s", name, pair[0])
		}
	}
	// On a member cluster too.
	private.Cluster, typed.Cluster = "eu", "eu"
	if private.Hash() == typed.Hash() {
		t.Error("on a member cluster, a typed id reaches a private instance")
	}
	// Ids without a dot cannot equal a derived one (which always has one): their digests stay
	// those of earlier versions, so an upgrade keeps their instances.
	sum := sha256.Sum256([]byte("team/postgres.default#main-db"))
	if got, want := NewIdentity("team", "web", "db", "postgres", "", "main-db").Hash(), hex.EncodeToString(sum[:])[:16]; got != want {
		t.Errorf("the digest of an id without a dot changed: %s, was %s", got, want)
	}
	sum = sha256.Sum256([]byte("team/postgres.default#owner.db"))
	private.Cluster = ""
	if want := hex.EncodeToString(sum[:])[:16]; private.Hash() != want {
		t.Errorf("the digest of a private instance changed: %s, was %s", private.Hash(), want)
	}
}
