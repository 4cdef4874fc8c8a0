#!/usr/bin/env bash
# The main job on a local simulated cluster, for a clone of the repository: builds the
# binaries, then runs `scorectl dev up|down` with its state in .dev/ (kubeconfig, logs). Safe
# to re-run.
#
#   hack/dev.sh up     (make dev)
#   hack/dev.sh docker (make dev-docker: a Docker host added to it)
#   hack/dev.sh down   (make dev-down)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

build() {
	hack/tools.sh
	printf '[dev] %s\n' "building scorectl and the controllers" >&2
	# The commit, as make build stamps it (the version is the file VERSION, compiled in).
	local stamp="-X github.com/score-orchestrator/score-orchestrator/internal/version.Commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
	go build -ldflags "$stamp" -o bin/scorectl ./cmd/scorectl
	ln -sf scorectl bin/kubectl-score
	go build -ldflags "$stamp" -o bin/score-controllers ./cmd/score-controllers
}

case "${1:-}" in
up)
	build
	bin/scorectl dev up --dir "$root/.dev"
	echo "  (from this clone: bin/kubectl --kubeconfig .dev/kubeconfig get score -A; make dev-down)"
	;;
docker)
	build
	hack/tools.sh docker
	go build -ldflags "-X github.com/score-orchestrator/score-orchestrator/internal/version.Commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)" -o bin/score-docker-agent ./cmd/score-docker-agent
	CGO_ENABLED=0 go build -o bin/orders-api ./examples/web-postgres-redis/orders-api
	bin/scorectl dev docker --dir "$root/.dev" --agent bin/score-docker-agent --orders-api bin/orders-api
	echo "  (DOCKER_HOST=unix://$root/.dev/docker/docker.sock docker ps; bin/scorectl host list --kubeconfig .dev/kubeconfig; make dev-down stops it too)"
	;;
members)
	build
	bin/scorectl dev members --dir "$root/.dev"
	echo "  (bin/scorectl cluster list --kubeconfig .dev/kubeconfig; make dev-down deletes the members too)"
	;;
down)
	[[ -x bin/scorectl ]] || build
	bin/scorectl dev down --dir "$root/.dev"
	;;
*) echo "usage: $0 up|members|docker|down" >&2; exit 2 ;;
esac
