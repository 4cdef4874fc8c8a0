#!/usr/bin/env bash
# Builds the local cluster's binaries from source through the Go module proxy and links them
# into ./bin. No Docker engine and no internet are needed, only the module proxy.
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes)
#   etcd                                                              (go.etcd.io/etcd/server/v3)
#   kwok, kwokctl                                                     (sigs.k8s.io/kwok)
#   contour, contour-crds.yaml   the Gateway API controller of make dev (github.com/projectcontour/contour)
#
# and installs Debian's chromium, for the dashboard's browser test, when it is missing.
#
# Binaries are built once into a versioned cache directory outside the clone
# ($SCORE_TOOLS_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/score-orchestrator), so a fresh clone
# on the same machine, and a CI rerun, reuse them. The three throwaway modules are kept apart:
# mixing them would let one downgrade the other's Kubernetes libraries. Contour has a
# versioned directory of its own, so that changing its version rebuilds it alone.
set -euo pipefail

KUBE_VERSION=v1.37.1
STAGING_VERSION=v0.37.1
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
CONTOUR_VERSION=v1.33.8

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SCORE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/score-orchestrator}"
dir="$cache/tools/kube-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
gateway_dir="$cache/tools/contour-$CONTOUR_VERSION"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

log() { printf '[tools] %s\n' "$*" >&2; }

# built NAME...: true when every named binary is already in the cache.
built() {
	local b
	for b in "$@"; do [[ -x "$dir/$b" ]] || return 1; done
}

# newmodule NAME [DIR]: an empty throwaway module directory for one build, under DIR (default
# the cluster binaries' directory).
newmodule() {
	local m="${2:-$dir}/src/$1"
	if ! command -v go >/dev/null; then
		log "building the cluster's binaries needs the Go toolchain (1.26 or later) on PATH; they are then cached in $dir"
		exit 1
	fi
	rm -rf "$m" && mkdir -p "$m"
	(cd "$m" && go mod init "scoretools.local/$1" >/dev/null 2>&1)
	echo "$m"
}

build_kubernetes() {
	built kube-apiserver kube-controller-manager kube-scheduler kubectl && return
	log "building Kubernetes $KUBE_VERSION (cold: ~10 min on 2 cores)"
	local m gomod
	m="$(newmodule kubernetes)"
	gomod="$(cd "$m" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
	# k8s.io/kubernetes points its staging modules at ./staging; outside its repo each must be
	# replaced by the published module of the matching version.
	{
		echo "require k8s.io/kubernetes $KUBE_VERSION"
		echo "replace ("
		sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\t\1 => \1 '"$STAGING_VERSION"'#p' "$gomod"
		echo ")"
	} >>"$m/go.mod"
	cat >"$m/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
	(cd "$m" && go mod tidy -e >/dev/null 2>&1 || true)
	(cd "$m" && go mod download)
	local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitTreeState=clean"
	local b
	for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		built "$b" && continue
		log "  $b"
		(cd "$m" && go build -tags tools -ldflags "$ld" -o "$dir/$b.tmp" "k8s.io/kubernetes/cmd/$b") && mv "$dir/$b.tmp" "$dir/$b"
	done
}

build_etcd() {
	built etcd && return
	log "building etcd $ETCD_VERSION"
	local m
	m="$(newmodule etcd)"
	cat >"$m/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
	(cd "$m" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1)
	(cd "$m" && go build -ldflags "-s -w" -o "$dir/etcd.tmp" .) && mv "$dir/etcd.tmp" "$dir/etcd"
}

build_kwok() {
	built kwok kwokctl && return
	log "building kwok $KWOK_VERSION"
	local m
	m="$(newmodule kwok)"
	cat >"$m/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
GO
	(cd "$m" && go get "sigs.k8s.io/kwok@$KWOK_VERSION" >/dev/null 2>&1 && go mod tidy -e >/dev/null 2>&1 || true)
	local b
	for b in kwok kwokctl; do
		(cd "$m" && go build -tags tools -ldflags "-s -w" -o "$dir/$b.tmp" "sigs.k8s.io/kwok/cmd/$b") && mv "$dir/$b.tmp" "$dir/$b"
	done
}

# build_contour builds Contour's controller, which make dev runs on the host as the development
# cluster's Gateway API implementation (internal/cli/devenv/gateway.go), and keeps beside it the CRDs
# of its release that it watches besides the Gateway API's (HTTPProxy and others).
build_contour() {
	[[ -x "$gateway_dir/contour" && -f "$gateway_dir/contour-crds.yaml" ]] && return
	log "building Contour $CONTOUR_VERSION, the development cluster's gateway controller (cold: ~2 min on 2 cores)"
	local m src
	m="$(newmodule contour "$gateway_dir")"
	cat >"$m/tools.go" <<'GO'
//go:build tools

package tools

import _ "github.com/projectcontour/contour/cmd/contour"
GO
	(cd "$m" && go get "github.com/projectcontour/contour@$CONTOUR_VERSION" >/dev/null 2>&1 && go mod tidy -e >/dev/null 2>&1 || true)
	(cd "$m" && go build -tags tools -ldflags "-s -w" -o "$gateway_dir/contour.tmp" github.com/projectcontour/contour/cmd/contour) && mv "$gateway_dir/contour.tmp" "$gateway_dir/contour"
	src="$(cd "$m" && go list -m -f '{{.Dir}}' github.com/projectcontour/contour)"
	install -m 0644 "$src/examples/contour/01-crds.yaml" "$gateway_dir/contour-crds.yaml.tmp" && mv "$gateway_dir/contour-crds.yaml.tmp" "$gateway_dir/contour-crds.yaml"
}

# build_score_k8s builds score-k8s, the comparison of make acceptance (not a test dependency),
# into the same cache. The Go module proxy does not serve score-k8s, so it builds from a source
# checkout: $SCORE_K8S_SRC (its dependencies come from the proxy).
build_score_k8s() {
	local out="$cache/tools/score-k8s"
	if [[ -z "${SCORE_K8S_SRC:-}" ]]; then
		[[ -x "$out" ]] && return
		log "set SCORE_K8S_SRC to a checkout of github.com/score-spec/score-k8s (the module proxy does not serve it)"
		exit 1
	fi
	log "building score-k8s from $SCORE_K8S_SRC"
	(cd "$SCORE_K8S_SRC" && go build -o "$out.tmp" ./cmd/score-k8s) && mv "$out.tmp" "$out"
}

# install_chromium installs Debian's Chromium for the dashboard's browser test, when it is missing
# and this runs as root; the packages are kept in the cache, so a rerun does not download them.
# Elsewhere it says how; the test skips without a browser unless SCORE_BROWSER_REQUIRED is set.
install_chromium() {
	[[ -x "${SCORE_CHROMIUM:-/usr/bin/chromium}" ]] && return
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
		log "the dashboard's browser test needs Chromium: apt-get install chromium (as root), or set SCORE_CHROMIUM"
		return
	fi
	log "installing Debian's chromium for the dashboard's browser test"
	local debs="$cache/apt"
	mkdir -p "$debs/partial"
	local install=(apt-get install -y -q --no-install-recommends -o "Dir::Cache::archives=$debs" -o APT::Sandbox::User=root chromium)
	DEBIAN_FRONTEND=noninteractive "${install[@]}" >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive "${install[@]}" >/dev/null; }
}

# build_docker_compose builds Docker Compose, the comparison of make bench-docker (not a test
# dependency), into the same cache. `go install` refuses its module (its go.mod excludes
# versions), so it builds from a source checkout: $COMPOSE_SRC (dependencies from the proxy).
build_docker_compose() {
	local out="$cache/tools/docker-compose"
	if [[ -z "${COMPOSE_SRC:-}" ]]; then
		[[ -x "$out" ]] && return
		log "set COMPOSE_SRC to a checkout of github.com/docker/compose (v5)"
		exit 1
	fi
	log "building docker-compose from $COMPOSE_SRC"
	(cd "$COMPOSE_SRC" && go build -o "$out.tmp" ./cmd) && mv "$out.tmp" "$out"
}

# install_docker installs Debian's Docker Engine (dockerd, containerd, runc) for the Docker
# runtime's tests, and mmdebstrap, which builds make dev-docker's images from Debian's packages,
# when they are missing and this runs as root; the packages are kept in the cache.
# Nothing starts it here: each test run starts its own dockerd, with its own data root and
# socket (internal/testing/dockerd), and stops it. Elsewhere it says how; the tests skip without
# it unless SCORE_DOCKER_REQUIRED is set.
install_docker() {
	command -v dockerd >/dev/null && command -v mmdebstrap >/dev/null && return
	if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
		log "the Docker runtime's tests need a Docker Engine: apt-get install docker.io (as root)"
		return
	fi
	log "installing Debian's docker.io (and mmdebstrap, for make dev-docker's images) for the Docker runtime"
	local debs="$cache/apt"
	mkdir -p "$debs/partial"
	local install=(apt-get install -y -q --no-install-recommends -o "Dir::Cache::archives=$debs" -o APT::Sandbox::User=root docker.io mmdebstrap)
	DEBIAN_FRONTEND=noninteractive "${install[@]}" >/dev/null || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive "${install[@]}" >/dev/null; }
}

case "${1:-all}" in
dir) echo "$dir"; exit 0 ;;
chromium) install_chromium; exit 0 ;;
docker) install_docker; exit 0 ;;
docker-compose)
	mkdir -p "$cache/tools" "$root/bin"
	build_docker_compose
	ln -sfn "$cache/tools/docker-compose" "$root/bin/docker-compose"
	exit 0
	;;
score-k8s)
	mkdir -p "$cache/tools" "$root/bin"
	build_score_k8s
	ln -sfn "$cache/tools/score-k8s" "$root/bin/score-k8s"
	exit 0
	;;
esac

mkdir -p "$dir" "$root/bin"
# One build at a time per cache: two clones (or a session's worktrees) building at once would
# share the throwaway modules and the .tmp outputs, and one would fail or link a half-written
# binary. The second waits, then finds the binaries built.
if command -v flock >/dev/null; then
	exec 9>"$dir.lock"
	flock 9 || { log "cannot lock $dir.lock"; exit 1; }
fi
build_kubernetes
build_etcd
build_kwok
# Contour's directory has a lock of its own, taken the same way.
mkdir -p "$gateway_dir"
if command -v flock >/dev/null; then
	exec 8>"$gateway_dir.lock"
	flock 8 || { log "cannot lock $gateway_dir.lock"; exit 1; }
fi
build_contour
install_chromium
install_docker
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl; do
	ln -sfn "$dir/$b" "$root/bin/$b"
done
for b in contour contour-crds.yaml; do
	ln -sfn "$gateway_dir/$b" "$root/bin/$b"
done
log "ready in $dir and $gateway_dir"
