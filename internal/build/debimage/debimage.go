// Package debimage makes container images from Debian's packages, for Docker hosts that pull
// nothing: a root filesystem built by mmdebstrap from this machine's apt sources, imported
// into a Docker Engine with the instructions (ENTRYPOINT, ENV...) that make it run as the
// image it stands in for. Nginx, Postgres and Redis stand in for the images the examples and
// score-compose's default provisioners name; Aliases maps those names to them.
package debimage

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Image is an image built from Debian's packages.
type Image struct {
	// Name is the image's reference in the Engine.
	Name string
	// Packages are installed over Debian's essential set.
	Packages []string
	// Hooks are mmdebstrap customize hooks: shell commands run on this machine, the root
	// filesystem at "$1".
	Hooks []string
	// Changes are Dockerfile instructions applied on import (ENTRYPOINT, CMD, ENV, WORKDIR).
	Changes []string
}

// Suite is the Debian release the images are built from.
const Suite = "bookworm"

// Nginx serves /usr/share/nginx/html on port 80, as the nginx image does. The package's
// default site is a symbolic link with an absolute target, which the hook, running on this
// machine, must not follow: it is replaced, not edited.
var Nginx = Image{
	Name:     "score-dev/nginx:debian-" + Suite,
	Packages: []string{"nginx-light"},
	Hooks:    []string{`rm -f "$1/etc/nginx/sites-enabled/default" && echo "server { listen 80 default_server; root /usr/share/nginx/html; index index.html; }" > "$1/etc/nginx/sites-enabled/default"`},
	Changes:  []string{`ENTRYPOINT ["nginx", "-g", "daemon off;"]`},
}

// postgresEntrypoint is what the postgres image's entrypoint does, in part: as root it owns
// the data directory and runs itself again as postgres; a data directory without a cluster is
// initialised with POSTGRES_USER and POSTGRES_PASSWORD and the database POSTGRES_DB (else
// one named as the user), listening on every address with password authentication.
const postgresEntrypoint = `#!/bin/sh
set -e
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown -R postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
	pw=$(mktemp)
	printf '%s' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" > "$pw"
	initdb -D "$PGDATA" --username="${POSTGRES_USER:-postgres}" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 > /dev/null
	rm -f "$pw"
	echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
	echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
	db="${POSTGRES_DB:-${POSTGRES_USER:-postgres}}"
	if [ "$db" != postgres ]; then
		echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" postgres > /dev/null
	fi
fi
if [ "$1" = postgres ]; then
	shift
	exec postgres -D "$PGDATA" "$@"
fi
exec "$@"
`

// Postgres is Debian's PostgreSQL 15, run as the postgres image runs (postgresEntrypoint),
// with psql and pg_isready on the PATH.
var Postgres = Image{
	Name:     "score-dev/postgres:debian-" + Suite,
	Packages: []string{"postgresql-15"},
	Hooks: []string{`cat > "$1/usr/local/bin/docker-entrypoint.sh" <<'EOF'
` + postgresEntrypoint + `EOF
chmod 755 "$1/usr/local/bin/docker-entrypoint.sh"`},
	Changes: []string{"ENV PGDATA=/var/lib/postgresql/data", "ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		`ENTRYPOINT ["docker-entrypoint.sh"]`, `CMD ["postgres"]`},
}

// Redis is Debian's Redis server, working in /data as the redis image does.
var Redis = Image{
	Name:     "score-dev/redis:debian-" + Suite,
	Packages: []string{"redis-server"},
	Hooks:    []string{`mkdir -p "$1/data"`},
	Changes:  []string{"WORKDIR /data", `CMD ["redis-server"]`},
}

// Aliases are the images the examples and score-compose's default provisioners name, each to
// the image that stands in for it (the agent's --image-alias).
func Aliases() map[string]string {
	return map[string]string{
		"nginx:1.27":                       Nginx.Name,
		"postgres:17-alpine":               Postgres.Name,
		"mirror.gcr.io/postgres:17-alpine": Postgres.Name,
		"redis:7-alpine":                   Redis.Name,
		"mirror.gcr.io/redis:7-alpine":     Redis.Name,
	}
}

// ImportProgram imports a static program as the image ref: the program alone, at /program,
// its entrypoint, with an empty /tmp and /etc.
func ImportProgram(ctx context.Context, engine Engine, ref, program string) error {
	data, err := os.ReadFile(program)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "program", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	for _, d := range []string{"tmp", "etc"} {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o1777, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return importImage(ctx, engine, &b, ref, []string{`ENTRYPOINT ["/program"]`})
}

func importImage(ctx context.Context, engine Engine, r io.Reader, ref string, changes []string) error {
	out, err := engine.ImageImport(ctx, image.ImportSource{Source: r, SourceName: "-"}, ref, image.ImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("importing %s: %w", ref, err)
	}
	defer out.Close()
	_, err = io.Copy(io.Discard, out)
	return err
}

// Engine is what Ensure asks of the Docker Engine.
type Engine interface {
	ImageInspect(ctx context.Context, imageID string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageImport(ctx context.Context, source image.ImportSource, ref string, options image.ImportOptions) (io.ReadCloser, error)
}

// Ensure makes the image in the Engine unless it is there: from its root filesystem cached in
// cacheDir, else built (mmdebstrap, about half a minute; it runs as root) and cached there.
func Ensure(ctx context.Context, engine Engine, img Image, cacheDir string, logf func(string, ...any)) error {
	if _, err := engine.ImageInspect(ctx, img.Name); err == nil {
		return nil
	}
	tarball := filepath.Join(cacheDir, img.key()+".tar")
	if _, err := os.Stat(tarball); err != nil {
		if err := build(ctx, img, tarball, logf); err != nil {
			return err
		}
	}
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	return importImage(ctx, engine, f, img.Name, img.Changes)
}

// key names the root filesystem of an image's definition: another definition, another file.
func (img Image) key() string {
	doc, _ := json.Marshal(struct {
		Image
		Args []string
	}{img, img.args("", "")})
	sum := sha256.Sum256(doc)
	name := strings.NewReplacer("/", "-", ":", "-").Replace(img.Name)
	return name + "-" + hex.EncodeToString(sum[:])[:12]
}

// args are mmdebstrap's arguments: the packages over Debian's essential set, without their
// documentation, the hooks, the suite, the tarball to write and the apt sources.
func (img Image) args(target, sources string) []string {
	args := []string{"--variant=essential", "--include=" + strings.Join(img.Packages, ","), "--mode=root", "--format=tar"}
	for _, docs := range []string{"doc", "man", "info"} {
		args = append(args, "--dpkgopt=path-exclude=/usr/share/"+docs+"/*")
	}
	for _, h := range img.Hooks {
		args = append(args, "--customize-hook="+h)
	}
	return append(args, Suite, target, sources)
}

// build makes the root filesystem with mmdebstrap into tarball (written whole, or not at all).
func build(ctx context.Context, img Image, tarball string, logf func(string, ...any)) error {
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return errors.New("mmdebstrap is not installed: hack/tools.sh docker installs it (as root)")
	}
	if err := os.MkdirAll(filepath.Dir(tarball), 0o755); err != nil {
		return err
	}
	sources := "/etc/apt/sources.list.d/debian.sources"
	if _, err := os.Stat(sources); err != nil {
		sources = "/etc/apt/sources.list"
	}
	logf("building %s from Debian's packages (mmdebstrap, a minute or two)", img.Name)
	tmp := tarball + ".tmp"
	defer os.Remove(tmp)
	if out, err := exec.CommandContext(ctx, "mmdebstrap", img.args(tmp, sources)...).CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("mmdebstrap %s: %v: %s", img.Name, err, strings.Join(lines[max(0, len(lines)-4):], "; "))
	}
	return os.Rename(tmp, tarball)
}
