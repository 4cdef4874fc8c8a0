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
	log "building scorectl and the controllers"
	go build -o bin/scorectl ./cmd/scorectl
	go build -o bin/score-controllers ./cmd/score-controllers

	log "installing the score.dev kinds"
	kubectl apply --server-side -f config/crd/bases >/dev/null
	kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null

	log "loading the Orchestrator Config (score-system/orchestrator-config): sample profiles and the development catalog"
	go run ./hack/assemble-config config/samples/orchestrator-config.yaml config/provisioners/*.yaml >.dev/orchestrator-config.yaml
	kubectl create namespace score-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	kubectl -n score-system create configmap orchestrator-config \
		--from-file=config.yaml=.dev/orchestrator-config.yaml --dry-run=client -o yaml |
		kubectl apply --server-side --force-conflicts -f - >/dev/null

	log "loading the default templates (score-system/score-templates)"
	kubectl -n score-system create configmap score-templates --from-file=config/templates --dry-run=client -o yaml |
		kubectl apply --server-side --force-conflicts -f - >/dev/null

	start_controller score-controllers --metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081

	log "applying the examples to namespace score-demo"
	kubectl create namespace score-demo --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	local f
	for f in examples/*/score.yaml; do
		bin/scorectl convert "$f" -n score-demo | kubectl apply --server-side -f - >/dev/null
		log "  $f"
	done

	log "waiting for the orchestrator to take the examples in hand"
	local i
	for i in $(seq 1 60); do
		if [[ "$(kubectl get workloads -n score-demo -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].reason}{" "}{end}' | wc -w)" -ge 3 ]]; then
			break
		fi
		sleep 0.5
	done

	echo
	kubectl get score -A
	echo
	echo "The cluster keeps running. Use it with:"
	echo "  bin/kubectl --kubeconfig .dev/kubeconfig get score -A"
	echo "Stop everything with: make dev-down"
}

# start_controller NAME ARGS...: (re)start a controller in the background, logging to .dev/NAME.log.
start_controller() {
	local name="$1"
	shift
	stop_controller "$name"
	KUBECONFIG="$root/.dev/kubeconfig" nohup "bin/$name" "$@" >".dev/$name.log" 2>&1 &
	echo $! >".dev/$name.pid"
	log "started $name (pid $(cat ".dev/$name.pid"), logs in .dev/$name.log)"
}

stop_controller() {
	local pidfile=".dev/$1.pid"
	if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		kill "$(cat "$pidfile")" && wait "$(cat "$pidfile")" 2>/dev/null || true
	fi
	rm -f "$pidfile"
}

down() {
	stop_controller score-controllers
	hack/cluster.sh down
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
