#!/usr/bin/env bash
# The main job on a local simulated cluster: cluster up, the score.dev kinds installed, the
# Orchestrator Config loaded, and the examples applied. Safe to re-run.
#
#   hack/dev.sh up     (make dev)
#   hack/dev.sh down   (make dev-down)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
kubectl() { "$root/bin/kubectl" --kubeconfig "$root/.dev/kubeconfig" "$@"; }
log() { printf '[dev] %s\n' "$*" >&2; }

up() {
	hack/cluster.sh up
	log "building scorectl"
	go build -o bin/scorectl ./cmd/scorectl

	log "installing the score.dev kinds"
	kubectl apply --server-side -f config/crd/bases >/dev/null
	kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null

	log "loading the Orchestrator Config (score-system/orchestrator-config)"
	kubectl create namespace score-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	kubectl -n score-system create configmap orchestrator-config \
		--from-file=config.yaml=config/samples/orchestrator-config.yaml --dry-run=client -o yaml |
		kubectl apply --server-side --force-conflicts -f - >/dev/null

	log "applying the examples to namespace score-demo"
	kubectl create namespace score-demo --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	local f
	for f in examples/*/score.yaml; do
		bin/scorectl convert "$f" -n score-demo | kubectl apply --server-side -f - >/dev/null
		log "  $f"
	done

	echo
	kubectl get score -A
	echo
	echo "The cluster keeps running. Use it with:"
	echo "  bin/kubectl --kubeconfig .dev/kubeconfig get score -A"
	echo "Stop everything with: make dev-down"
}

down() {
	hack/cluster.sh down
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
