package provisioning

import (
	"testing"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// BenchmarkRenderCatalogPostgres renders the development catalog's postgres definition, its
// state kept: what the provisioner does for a claim on every pass that runs it.
func BenchmarkRenderCatalogPostgres(b *testing.B) {
	cfg := loadCatalog(b)
	var def orchconfig.Provisioner
	for _, p := range cfg.Provisioners {
		if p.URI == "template://score-dev/postgres" {
			def = p
		}
	}
	id := NewIdentity("team", "web", "db", "postgres", "", "")
	data := Data{Guid: id.Guid(), Uid: id.Uid(), Type: "postgres", Class: id.Class, Id: id.ID, Namespace: "team", Instance: id.Hash(),
		SourceWorkload: "web", State: map[string]any{}, Shared: map[string]any{}}
	first, err := RenderTemplates(def, data)
	if err != nil {
		b.Fatal(err)
	}
	data.State = first.State
	for b.Loop() {
		if _, err := RenderTemplates(def, data); err != nil {
			b.Fatal(err)
		}
	}
}
