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
	ln -sf scorectl bin/kubectl-score
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

	wait_ready score-demo 180

	echo
	bin/scorectl status -n score-demo --kubeconfig "$root/.dev/kubeconfig"
	echo
	echo "Endpoints:"
	kubectl get workloads -n score-demo -o jsonpath='{range .items[*]}{"  "}{.metadata.name}{": "}{.status.endpoint}{"\n"}{end}'
	echo
	echo "Try: bin/scorectl why orders -n score-demo --kubeconfig .dev/kubeconfig"
	echo "The cluster keeps running. Use it with:"
	echo "  bin/kubectl --kubeconfig .dev/kubeconfig get score -A"
	echo "Stop everything with: make dev-down"
}

# wait_ready NAMESPACE SECONDS: wait until every Workload in NAMESPACE is Ready, showing
# progress; on timeout, show what blocks each one and fail.
wait_ready() {
	local ns="$1" limit="$2" start=$SECONDS total ready line
	while :; do
		total=$(kubectl get workloads -n "$ns" --no-headers 2>/dev/null | wc -l)
		line=$(kubectl get workloads -n "$ns" -o jsonpath='{range .items[*]}{.metadata.name}{"="}{.status.conditions[?(@.type=="Ready")].reason}{" "}{end}')
		ready=$(grep -o '=Succeeded' <<<"$line" | wc -l || true)
		printf '\r[dev] %3ds  %d/%d Ready  %s' $((SECONDS - start)) "$ready" "$total" "$line" >&2
		if [[ "$total" -gt 0 && "$ready" -eq "$total" ]]; then
			echo >&2
			return 0
		fi
		if ((SECONDS - start > limit)); then
			echo >&2
			log "not every example became Ready within ${limit}s:"
			kubectl get workloads -n "$ns" -o custom-columns='NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,REASON:.status.conditions[?(@.type=="Ready")].reason,MESSAGE:.status.conditions[?(@.type=="Ready")].message' >&2
			log "controller logs: .dev/score-controllers.log"
			return 1
		fi
		sleep 1
	done
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
