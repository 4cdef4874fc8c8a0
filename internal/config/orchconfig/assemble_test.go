package orchconfig

import (
	"os"
	"strings"
	"testing"
)

func TestAppendProvisioners(t *testing.T) {
	base, err := os.ReadFile("../../../config/samples/orchestrator-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := []byte("- {uri: template://a/one, type: one}\n")
	b := []byte("- {uri: template://b/two, type: two}\n- {uri: template://b/three, type: three}\n")
	out, err := AppendProvisioners(base, a, b)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, p := range cfg.Provisioners {
		uris = append(uris, p.URI)
	}
	if got := strings.Join(uris[len(uris)-3:], ","); got != "template://a/one,template://b/two,template://b/three" {
		t.Fatalf("appended in order after the base's own: %v", uris)
	}
	if _, err := AppendProvisioners(base, []byte("- {uri: lambda://x, type: one}\n")); err == nil || !strings.Contains(err.Error(), "not a provisioner strategy") {
		t.Fatalf("an invalid result is refused: %v", err)
	}
}
