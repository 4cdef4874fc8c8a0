#!/usr/bin/env bash
# The local simulated cluster: real kube-apiserver, etcd, kube-controller-manager and
# kube-scheduler, with kwok simulating nodes and pods. No Docker engine, no internet.
#
#   hack/cluster.sh up     start it (idempotent); kubeconfig at .dev/kubeconfig
#   hack/cluster.sh down   stop and delete it
#   hack/cluster.sh status print whether it is up
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/bin"
state="${SCORE_DEV_DIR:-$root/.dev}"
name="${SCORE_CLUSTER_NAME:-score-dev}"
kubeconfig="$state/kubeconfig"
export KWOK_WORKDIR="$state/kwok"
export KWOK_KUBE_VERSION=v1.37.1

log() { printf '[cluster] %s\n' "$*" >&2; }
kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

up() {
	"$root/hack/tools.sh"
	mkdir -p "$state"
	# kwokctl picks each component's port by probing downwards from 32767, in every process
	# alike: two clusters created at once (test packages run in parallel) probe the same ports
	# before either binds them, and one API server never serves. One creation at a time on this
	# machine; a cluster holds its ports once it is up.
	local lock="${XDG_CACHE_HOME:-$HOME/.cache}/score-orchestrator/cluster-up.lock"
	mkdir -p "$(dirname "$lock")"
	exec 9>"$lock"
	flock 9 # released once the API server answers, or when this script ends
	if "$bin/kwokctl" get clusters 2>/dev/null | grep -qx "$name"; then
		if kubectl get --raw /readyz >/dev/null 2>&1; then
			log "cluster $name is already up"
			nodes
			service_range
			volumes
			return
		fi
		log "cluster $name exists but does not answer: starting it"
		"$bin/kwokctl" start cluster --name "$name" --wait 2m >&2 9>&- || { "$bin/kwokctl" delete cluster --name "$name" >&2; }
	fi
	if ! "$bin/kwokctl" get clusters 2>/dev/null | grep -qx "$name"; then
		log "creating cluster $name"
		local extra=()
		# SCORE_CLUSTER_AUDIT_POLICY: an audit policy file; the API server logs what it selects
		# (kwokctl's work directory, clusters/NAME/logs/audit.log). The benchmark counts by it.
		if [[ -n "${SCORE_CLUSTER_AUDIT_POLICY:-}" ]]; then
			extra+=(--kube-audit-policy "$SCORE_CLUSTER_AUDIT_POLICY")
		fi
		"$bin/kwokctl" create cluster "${extra[@]}" --name "$name" --runtime binary \
			--kube-apiserver-binary "$bin/kube-apiserver" \
			--kube-controller-manager-binary "$bin/kube-controller-manager" \
			--kube-scheduler-binary "$bin/kube-scheduler" \
			--etcd-binary "$bin/etcd" \
			--kwok-controller-binary "$bin/kwok" \
			--kubeconfig "$kubeconfig" \
			--disable-qps-limits \
			--wait 2m >&2 9>&- # the cluster's processes must not hold the lock
	fi
	"$bin/kwokctl" get kubeconfig --name "$name" >"$kubeconfig"
	kubectl get --raw /readyz >/dev/null
	flock -u 9
	nodes
	service_range
	volumes
	log "ready: $bin/kubectl --kubeconfig $kubeconfig get nodes"
}

# nodes creates two large fake nodes that kwok keeps Ready; pods scheduled to them run at once.
nodes() {
	local i
	for i in 0 1; do
		kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    kubernetes.io/role: agent
    type: kwok
spec: {}
status:
  allocatable: {cpu: "64", memory: 512Gi, pods: "1000"}
  capacity: {cpu: "64", memory: 512Gi, pods: "1000"}
YAML
	done
	kubectl wait --for=condition=Ready node/kwok-node-0 node/kwok-node-1 --timeout=60s >/dev/null
}

# service_range adds a /20 of Service IPs: the default /24 runs out at ~254 Services.
service_range() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata:
  name: score-dev-extra
spec:
  cidrs: ["10.100.0.0/20"]
YAML
}

# volumes pre-creates a pool of PersistentVolumes: the simulated cluster has no storage
# provisioner, and volume claims (a StatefulSet's volumeClaimTemplates) bind only to existing
# volumes. The real PV controller binds them.
volumes() {
	local i
	[[ "${SCORE_CLUSTER_VOLUMES:-64}" -gt 0 ]] || return 0
	{
		for i in $(seq -w 1 "${SCORE_CLUSTER_VOLUMES:-64}"); do
			cat <<YAML
apiVersion: v1
kind: PersistentVolume
metadata:
  name: score-dev-pv-$i
  labels: {score.dev/pool: dev}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  hostPath: {path: /tmp/score-dev-pv-$i}
---
YAML
		done
	} | kubectl apply -f - >/dev/null
}

down() {
	if [[ -x "$bin/kwokctl" ]] && "$bin/kwokctl" get clusters 2>/dev/null | grep -qx "$name"; then
		log "deleting cluster $name"
		"$bin/kwokctl" delete cluster --name "$name" >&2
	fi
	rm -f "$kubeconfig"
}

status() {
	if [[ -f "$kubeconfig" ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
		echo "up"
	else
		echo "down"
		return 1
	fi
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
