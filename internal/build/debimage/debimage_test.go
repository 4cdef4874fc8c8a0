package debimage

import (
	"slices"
	"strings"
	"testing"
)

// An image's cached root filesystem is named by its whole definition: another package, hook
// or instruction is another file, never a stale one reused.
func TestKeyFollowsTheDefinition(t *testing.T) {
	base := Postgres.key()
	if base != Postgres.key() || !strings.HasPrefix(base, "score-dev-postgres-debian-bookworm-") {
		t.Fatalf("key %q", base)
	}
	for _, changed := range []Image{
		{Name: Postgres.Name, Packages: []string{"postgresql-16"}, Hooks: Postgres.Hooks, Changes: Postgres.Changes},
		{Name: Postgres.Name, Packages: Postgres.Packages, Hooks: append(slices.Clone(Postgres.Hooks), "true"), Changes: Postgres.Changes},
		{Name: Postgres.Name, Packages: Postgres.Packages, Hooks: Postgres.Hooks},
	} {
		if changed.key() == base {
			t.Errorf("%+v keeps the key of Postgres", changed)
		}
	}
}

// Every alias names an image this package builds.
func TestAliasesNameBuiltImages(t *testing.T) {
	built := []string{Nginx.Name, Postgres.Name, Redis.Name}
	for from, to := range Aliases() {
		if !slices.Contains(built, to) {
			t.Errorf("%s is aliased to %s, which is not built here", from, to)
		}
	}
}
