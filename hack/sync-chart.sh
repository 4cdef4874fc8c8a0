#!/usr/bin/env bash
# Writes the version (the file VERSION, its one source) into the chart's version and
# appVersion and the kustomize base's image tag, and copies what the Helm chart must carry from
# config/ into charts/score-orchestrator (a chart cannot read files outside its directory): the
# CRDs, the generated controller roles, the leader-election Role, the user roles, the Grafana
# dashboard, the default templates (also config/default/templates.yaml) and the development
# Orchestrator Config (also config/default/orchestrator-config.yaml). `make generate` runs it;
# test/install fails when the copies drift, TestVersionsAgree when the version does.
set -euo pipefail
cd "$(dirname "$0")/.."
chart=charts/score-orchestrator
version="$(tr -d '[:space:]' <VERSION)"
if ! [[ "$version" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "VERSION: \"$version\" is not a version (MAJOR.MINOR.PATCH[-PRERELEASE])" >&2
  exit 1
fi
sed -i -e "s/^version: .*/version: $version/" -e "s/^appVersion: .*/appVersion: \"$version\"/" "$chart/Chart.yaml"
sed -i -e "s|image: score-orchestrator/score-controllers:.*|image: score-orchestrator/score-controllers:$version|" config/default/manager.yaml
rm -rf "$chart/crds" "$chart/files"
mkdir -p "$chart/crds" "$chart/files/rbac/users" "$chart/files/admission" "$chart/files/grafana"
cp config/crd/bases/*.yaml "$chart/crds/"
for c in orchestrator provisioner runtime rollout; do
  cp "config/rbac/$c/role.yaml" "$chart/files/rbac/$c.yaml"
done
cp config/rbac/leader-election.yaml "$chart/files/rbac/"
cp config/rbac/users/*.yaml "$chart/files/rbac/users/"
for f in config/admission/*.yaml; do # the policies, not the base's kustomization
  [ "$(basename "$f")" = kustomization.yaml ] || cp "$f" "$chart/files/admission/"
done
cp config/grafana/*.json "$chart/files/grafana/"
# The default templates as the ConfigMaps make dev installs (one definition: devenv).
go run ./hack/templates-configmaps -format json >"$chart/files/templates.json"
go run ./hack/templates-configmaps -format yaml >config/default/templates.yaml
# The development config (sample profiles and the provisioner catalog) for the chart and the
# kustomize base alike.
go run ./hack/assemble-config config/samples/orchestrator-config.yaml config/provisioners/*.yaml >"$chart/files/orchestrator-config.yaml"
cp "$chart/files/orchestrator-config.yaml" config/default/orchestrator-config.yaml
