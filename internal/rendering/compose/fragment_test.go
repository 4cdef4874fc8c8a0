package compose

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func parseYAML(t *testing.T, services, volumes, files string) (Fragment, error) {
	t.Helper()
	var maps [3]map[string]any
	for i, text := range []string{services, volumes, files} {
		if err := yaml.Unmarshal([]byte(text), &maps[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ParseFragment(maps[0], maps[1], maps[2])
}

// What a definition's Compose templates may ask of a host: a tenant's values reach them, so
// whatever would reach the host itself (its directories, its ports, its privileges, the
// agent's environment) is refused, by name.
func TestParseFragmentRefuses(t *testing.T) {
	for _, tc := range []struct{ name, services, volumes, files, want string }{
		{"privileged", "a: {image: x, privileged: true}", "", "", "privileged is not run"},
		{"host network", "a: {image: x, network_mode: host}", "", "", "network_mode is not run"},
		{"host directory", "a: {image: x, volumes: [{type: bind, source: /etc, target: /x}]}", "", "", "never a directory of the host"},
		{"host directory, short syntax", "a: {image: x, volumes: ['/var/run/docker.sock:/s']}", "", "", "never a directory of the host"},
		{"mounts directory escaped", "a: {image: x, volumes: [{type: bind, source: " + MountsDirectory + "/../etc, target: /x}]}", "", "", "not a path under the mounts directory"},
		{"file escapes", "", "", "'../x': y", "not a path under the mounts directory"},
		{"fixed host port", "a: {image: x, ports: [{target: 5432, published: 5432}]}", "", "", "the host picks the port"},
		{"fixed host port, short syntax", "a: {image: x, ports: ['80:80']}", "", "", "the host picks the port"},
		{"agent's environment", "a: {image: x, environment: {A: '${HOME}'}}", "", "", "Compose CLI's environment"},
		{"agent's environment, by name", "a: {image: x, environment: [HOME]}", "", "", "Compose CLI's environment"},
		{"undeclared volume", "a: {image: x, volumes: ['data:/d']}", "", "", "not one the definition declares"},
		{"remote volume", "", "d: {driver: nfs}", "", "local volumes only"},
		{"unknown dependency", "a: {image: x, depends_on: [b]}", "", "", "does not run"},
		{"no image", "a: {command: [x]}", "", "", "no image"},
		{"a name that is a path", "'../a': {image: x}", "", "", "not a service name"},
		{"the runtime's own label", "a: {image: x, labels: {score.dev/plan: web}}", "", "", "the runtime's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseYAML(t, tc.services, tc.volumes, tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// Compose's short and long syntaxes read as one: $$ is a $, a command string is split as a
// shell splits it, a string healthcheck is CMD-SHELL's, a list of dependencies waits for a
// start, a bind of the mounts directory copies its files in.
func TestParseFragmentReadsCompose(t *testing.T) {
	f, err := parseYAML(t, `
db:
  image: postgres
  environment: [PGPASSWORD=pa$$word]
  healthcheck: {test: pg_isready, interval: 2s, retries: 3}
  volumes: ['data:/var/lib/postgresql/data']
init:
  image: postgres
  command: sh -c 'psql "$$URL" < /s/a.sql'
  depends_on: [db]
  volumes: [{type: bind, source: `+MountsDirectory+`/scripts, target: /s, read_only: true}]
`, "data: {driver: local}", "scripts/a.sql: select 1\nscripts/b.sql: select 2")
	if err != nil {
		t.Fatal(err)
	}
	db, init := f.Services["db"], f.Services["init"]
	if db.Environment["PGPASSWORD"] != "pa$word" || db.Healthcheck.Test[0] != "CMD-SHELL" || db.Mounts[0].Volume != "data" {
		t.Fatalf("db: %+v", db)
	}
	if strings.Join(init.Command, "|") != `sh|-c|psql "$URL" < /s/a.sql` || init.DependsOn["db"] != ServiceStarted {
		t.Fatalf("init: %+v", init)
	}
	if files := f.FilesOf(init.Mounts[0]); files["/s/a.sql"] != "select 1" || len(files) != 2 {
		t.Fatalf("files: %v", files)
	}
	if order, _ := f.Order(); strings.Join(order, ",") != "db,init" {
		t.Fatalf("order: %v", order)
	}
	cyclic := Fragment{Services: map[string]Service{"a": {DependsOn: map[string]string{"b": ServiceStarted}}, "b": {DependsOn: map[string]string{"a": ServiceStarted}}}}
	if _, err := cyclic.Order(); err == nil {
		t.Fatal("a cycle has no order")
	}
}

// A refusal of an interpolation names the variable's key, never the value, which may hold a
// password.
func TestInterpolationErrorHoldsNoValue(t *testing.T) {
	_, err := parseYAML(t, "a: {image: x, environment: {PASSWORD: 'pa${ss}word-s3cret'}}", "", "")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "PASSWORD") {
		t.Fatalf("got %v", err)
	}
}

// A fragment read back from its Secret (which whoever writes the namespace's Secrets may
// write) is checked again: what ParseFragment would refuse is refused.
func TestFragmentCheck(t *testing.T) {
	for name, f := range map[string]Fragment{
		"a path for a name":       {Services: map[string]Service{"../x": {Image: "x"}}},
		"a file outside":          {Files: map[string]string{"../etc/passwd": "x"}},
		"a mount of a host path":  {Services: map[string]Service{"a": {Image: "x", Mounts: []Mount{{Files: "/etc", Target: "/x"}}}}},
		"an undeclared volume":    {Services: map[string]Service{"a": {Image: "x", Mounts: []Mount{{Volume: "other", Target: "/x"}}}}},
		"a dependency not run":    {Services: map[string]Service{"a": {Image: "x", DependsOn: map[string]string{"b": ServiceStarted}}}},
		"the runtime's own label": {Services: map[string]Service{"a": {Image: "x", Labels: map[string]string{"score.dev/plan-uid": "u"}}}},
		"no image":                {Services: map[string]Service{"a": {}}},
	} {
		if err := f.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := (Fragment{Services: map[string]Service{"a": {Image: "x"}}}).Check(); err != nil {
		t.Fatal(err)
	}
}
