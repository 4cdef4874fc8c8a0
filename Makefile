# Score Orchestrator. The two commands a newcomer needs:
#   make dev    the main job on a local simulated cluster (builds what it needs on first use)
#   make test   every test
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

KUBECONFIG_DEV := $(CURDIR)/.dev/kubeconfig
KUBECTL := $(CURDIR)/bin/kubectl --kubeconfig $(KUBECONFIG_DEV)

.PHONY: all
all: build

# The version: the file VERSION, its one source (the binaries compile it in, make generate
# writes it into the chart and the kustomize base, the images are tagged with it). The commit
# is stamped into the binaries and the images' labels.
VERSION ?= $(shell tr -d '[:space:]' <VERSION)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
STAMP := -X github.com/score-orchestrator/score-orchestrator/internal/version.Commit=$(COMMIT)

.PHONY: build
build: ## Build the binaries into bin/
	go build -ldflags "$(STAMP)" -o bin/scorectl ./cmd/scorectl
	go build -ldflags "$(STAMP)" -o bin/score-controllers ./cmd/score-controllers
	ln -sf scorectl bin/kubectl-score

.PHONY: images
images: ## Build the score-controllers and scorectl images without a container engine (OCI layouts in bin/images); PUSH=registry/path pushes them
	go run ./hack/images --out bin/images --version $(VERSION) --commit $(COMMIT) $(if $(PUSH),--push $(PUSH))

.PHONY: release
release: ## Build the release of this commit under dist/VERSION: scorectl for linux and darwin on amd64 and arm64, the images as OCI archives, the chart, the CRD bundle, SBOMs and SHA256SUMS (make release VERSION=x.y.z; docs/upgrading.md)
	VERSION=$(VERSION) hack/release.sh build

.PHONY: release-check
release-check: ## Build the release twice (the second from a copy of the commit elsewhere, with an empty build cache) and check every file is byte-identical
	VERSION=$(VERSION) hack/release.sh check

.PHONY: tools
tools: ## Build (once, cached) kube-apiserver, etcd, controller-manager, scheduler, kubectl and kwok
	hack/tools.sh

.PHONY: generate
generate: ## Regenerate CRDs, deep-copy code and RBAC roles; copy them into the Helm chart
	go tool controller-gen object paths=./api/...
	go tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	go tool controller-gen rbac:roleName=score-orchestrator paths=./internal/controller/orchestrator/... output:rbac:artifacts:config=config/rbac/orchestrator
	go tool controller-gen rbac:roleName=score-provisioner paths=./internal/controller/provisioner/... output:rbac:artifacts:config=config/rbac/provisioner
	go tool controller-gen rbac:roleName=score-runtime paths=./internal/controller/runtime/... output:rbac:artifacts:config=config/rbac/runtime
	go tool controller-gen rbac:roleName=score-rollout paths="./internal/controller/rollout/...;./internal/controller/preview/..." output:rbac:artifacts:config=config/rbac/rollout
	hack/sync-chart.sh

.PHONY: lint
lint: ## gofmt, go vet and a tidy go.mod
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go mod tidy -diff

.PHONY: test
test: tools lint ## Every test: unit, integration (real API server) and generated-file checks
	KUBEBUILDER_ASSETS=$(CURDIR)/bin go test -count=1 -timeout 25m ./...
	@go run ./hack/corpus-note

.PHONY: acceptance
acceptance: ## Rewrite docs/acceptance.md (SCORE_K8S_SRC=checkout to run score-k8s again, else its recorded outcomes)
	if [[ -n "$${SCORE_K8S_SRC:-}" ]]; then hack/tools.sh score-k8s && go run ./hack/acceptance --score-k8s bin/score-k8s; else go run ./hack/acceptance; fi

.PHONY: render-bench
render-bench: build ## Time scorectl render of a 100-file app against score-k8s generate, side by side (SCORE_K8S_SRC=checkout)
	SCORE_K8S_SRC=$${SCORE_K8S_SRC:?set SCORE_K8S_SRC to a score-k8s checkout} hack/tools.sh score-k8s
	go run ./hack/render-bench --score-k8s bin/score-k8s --scorectl bin/scorectl

# Fuzz targets, one per line as package:Target (go test -fuzz runs one target at a time).
FUZZ_TARGETS := \
	./internal/cli/scorefile:FuzzScoreRoundTrip \
	./internal/cli/scorefile:FuzzScoreMetadata \
	./internal/config/orchconfig:FuzzParse \
	./internal/templating/placeholder:FuzzSubstitute \
	./internal/planning/values:FuzzCompose \
	./internal/planning/planner:FuzzBuildPlan \
	./internal/planning/values:FuzzNormalize \
	./internal/rendering/render:FuzzRenderLiteral \
	./internal/templating/yamltemplate:FuzzPrintedValueStaysAValue \
	./internal/status/mirror:FuzzValidateURL \
	./internal/status/mirror:FuzzMirror
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (make fuzz FUZZTIME=30s); make test runs their seeds
	@for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		go test "$${t%%:*}" -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 50x || exit 1; \
	done

# The scale benchmark (docs/performance.md): N Workloads (default 200) of the MIX (postgres,
# none, three, batch, or weighted: postgres=3,batch=1), all at once or RATE per second, on a
# cluster of its own; BENCH_ARGS are more score-bench flags (--profile-dir DIR,
# --controller-args "...").
MIX ?= postgres
RATE ?= 0
BENCH_OUT ?= bench-result.json
BENCH_ARGS ?=

.PHONY: bench
bench: tools build ## The scale benchmark: make bench N=200 MIX=postgres RATE=0 BENCH_OUT=result.json
	go build -o bin/score-bench ./hack/score-bench
	bin/score-bench --n $(or $(N),200) --mix $(MIX) --rate $(RATE) --out $(BENCH_OUT) $(BENCH_ARGS)

.PHONY: bench-docker
bench-docker: tools ## The Docker runtime against docker compose up --wait, alternating: make bench-docker N=50 COMPOSE_SRC=compose-checkout
	hack/tools.sh docker && hack/tools.sh docker-compose
	go run ./hack/docker-bench --n $(or $(N),50) --compose bin/docker-compose --out $(or $(BENCH_OUT),docker-bench.json) $(BENCH_ARGS)

.PHONY: chaos
chaos: tools ## Roll out N Workloads (default 300) while killing controllers, the API server and etcd; audit the result (MEMBERS=2: on member clusters too)
	go run ./test/chaos/score-chaos -workloads $(or $(N),300) -members $(or $(MEMBERS),0)

.PHONY: cluster-up
cluster-up: ## Start the local simulated cluster (kubeconfig .dev/kubeconfig)
	hack/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Stop and delete the local simulated cluster
	hack/cluster.sh down

.PHONY: dev
dev: ## The main job: local cluster, kinds, config and the examples
	hack/dev.sh up

.PHONY: dev-members
dev-members: ## Two member clusters on this machine, registered on the make dev cluster, an example placed on one by label
	hack/dev.sh members

.PHONY: dev-docker
dev-docker: ## A Docker host added to the make dev cluster: dockerd, the agent, hello and orders (postgres, redis) Ready on it (curl their endpoints on 127.0.0.1)
	hack/dev.sh docker

.PHONY: dev-down
dev-down: ## Stop everything make dev started
	hack/dev.sh down

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-14s %s\n", $$1, $$2}'
