# rukpak — run `make help` for the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
CLUSTER_BIN := $(BIN)/cluster
export KUBEBUILDER_ASSETS ?= $(CLUSTER_BIN)
# Flags of every tier's go test; give them as -flag=value (make test-unit's
# hack/testrun passes the test binary's own to each binary as -test.flag).
GO_TEST_FLAGS ?= -count=1 -timeout=60m
# The race detector's runtime reserves terabytes of address space, so a
# race-built test binary cannot run as a child process under the memory
# limit the sandbox sets (RLIMIT_DATA). The packages whose tests run their
# own binary that way are tested without it; everything else with it.
# internal/archive starts no goroutine, so the race detector has nothing
# to find there, and it makes the 100 MiB hard-link bomb of its full tests
# (make test) 12 times slower: 75 s instead of 6.
NO_RACE_PKGS := ./internal/sandbox ./internal/format/sandboxed ./internal/archive

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-17s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code for the API types.
	go tool controller-gen object paths=./api/...

.PHONY: manifests
manifests: ## Generate CRDs and RBAC under config/.
	go tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	go tool controller-gen rbac:roleName=rukpak-manager paths=./internal/... output:rbac:artifacts:config=config/rbac

.PHONY: tidy
tidy: ## go mod tidy, for rukpak and for provisioners/appspec (its own module, which builds against this one).
	go mod tidy
	cd provisioners/appspec && go mod tidy

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
# Without the tag: what the unit tier builds; with it: the test files that
# need an API server too (docs/development.md: Test tiers).
vet: ## Run go vet, without and with the build tag integration.
	go vet ./...
	go vet -tags integration ./...

.PHONY: check
check: vet ## Check formatting, vet, tidy modules (both), and that each test runs in a tier (hack/test.sh check); make test runs it.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	@go mod tidy -diff >/dev/null && (cd provisioners/appspec && go mod tidy -diff >/dev/null) || { echo "go.mod or go.sum not tidy, here or in provisioners/appspec: make tidy"; exit 1; }
	hack/test.sh check

GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT := $(BIN)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)

$(GOLANGCI_LINT):
	mkdir -p $(BIN)/tools/.build
	cd $(BIN)/tools/.build && GOBIN=$(BIN)/tools/.build go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/tools/.build/golangci-lint $@

# The helm CLI the bench measures rukpak against (-peers): the version of
# helm.sh/helm/v4 that rukpak embeds, built from its own module.
HELM_VERSION ?= $(shell go list -m -f '{{.Version}}' helm.sh/helm/v4)
HELM := $(BIN)/tools/helm-$(HELM_VERSION)

$(HELM):
	mkdir -p $(BIN)/tools/.build
	cd $(BIN)/tools/.build && CGO_ENABLED=0 GOBIN=$(BIN)/tools/.build go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(BIN)/tools/.build/helm $@
	ln -sf $(notdir $@) $(BIN)/tools/helm

# The Flux controllers the bench measures rukpak against (-peers):
# source-controller and kustomize-controller at the versions
# hack/tools/flux/go.mod names, built from their modules with the replace
# directives of their own go.mod files (which go install would ignore).
FLUX_TOOLS := hack/tools/flux
# Read from go.mod, not with go list -m, which would load the module graph
# at every make.
flux_version = $(shell awk '$$1 == "github.com/fluxcd/$(1)" && $$2 != "" {print $$2}' $(FLUX_TOOLS)/go.mod)
SOURCE_CONTROLLER := $(BIN)/tools/source-controller-$(call flux_version,source-controller)
KUSTOMIZE_CONTROLLER := $(BIN)/tools/kustomize-controller-$(call flux_version,kustomize-controller)

# $(call flux_build,NAME): build github.com/fluxcd/NAME into $@ and link
# bin/tools/NAME to it.
define flux_build
	mkdir -p $(BIN)/tools
	cd $(FLUX_TOOLS) && GOWORK=off CGO_ENABLED=0 go build -o $@.tmp github.com/fluxcd/$(1)
	mv $@.tmp $@
	ln -sf $(notdir $@) $(BIN)/tools/$(1)
endef

$(SOURCE_CONTROLLER):
	$(call flux_build,source-controller)

$(KUSTOMIZE_CONTROLLER):
	$(call flux_build,kustomize-controller)

.PHONY: flux
flux: $(SOURCE_CONTROLLER) $(KUSTOMIZE_CONTROLLER) ## Build Flux's source-controller and kustomize-controller into bin/tools (once), for make bench-peers.

.PHONY: lint
lint: check $(GOLANGCI_LINT) ## make check, then golangci-lint with the linters of .golangci.yml (built from its module into bin/tools once); CI runs it.
	$(GOLANGCI_LINT) run ./...

##@ Build

.PHONY: cluster-bins
cluster-bins: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok into bin/cluster (once).
	hack/build-cluster-bins.sh $(CLUSTER_BIN)

.PHONY: build
# Static, without cgo, like the release (internal/release). With cgo, the
# package plugin (which kustomize's plugin loader imports) makes the linker
# export every symbol: 19 MB of dynamic symbol tables that the loader reads
# at every start, and about 20 MiB more of the manager's resident memory.
build: ## Build bin/rukpak (the manager) and bin/rukpakctl (the CLI).
	CGO_ENABLED=0 go build -o $(BIN)/rukpak ./cmd/rukpak
	CGO_ENABLED=0 go build -o $(BIN)/rukpakctl ./cmd/rukpakctl

##@ Release

VERSION ?=
REGISTRY ?=
RELEASE_DIR ?= dist
RELEASE_FLAGS ?=

.PHONY: release
release: ## Write rukpak.yaml, the manager's image (OCI tarball) and rukpakctl binaries to dist/: make release VERSION=v0.x.y [REGISTRY=host/org] (pushes the image).
	@if [ -z "$(VERSION)" ]; then echo "usage: make release VERSION=v0.x.y [REGISTRY=host/org]"; exit 1; fi
	go run ./hack/release --version=$(VERSION) --out=$(RELEASE_DIR) $(if $(REGISTRY),--image=$(REGISTRY)/rukpak --push) $(RELEASE_FLAGS)

##@ Run and test

.PHONY: run
run: build cluster-bins ## Start a local control plane with rukpak and install the examples.
	hack/run.sh

export GO_TEST_FLAGS NO_RACE_PKGS

.PHONY: test
test: build cluster-bins check ## Run all tests: unit (in full: also what -short leaves out), then envtest integration and end to end at once, then the hostile corpus (TEST_TIERS_SERIAL=1: one tier after the other); events in test-results/.
	hack/test-all.sh

.PHONY: test-unit
test-unit: ## The fast tier: tests that need no API server, -short, no race; test binaries kept in .local/test/unit (docs/development.md).
	hack/test.sh unit

.PHONY: test-integration
test-integration: cluster-bins ## Tests against a real API server (envtest; go test -tags integration) and the appspec provisioner's module, with the race detector.
	hack/test.sh integration

.PHONY: test-e2e
test-e2e: build cluster-bins ## End-to-end tests on the local cluster (test/...).
	hack/test.sh e2e

.PHONY: bench
bench: build cluster-bins ## Measure install throughput against the server-side apply floor.
	go run ./test/bench $(BENCH_ARGS)

.PHONY: bench-follow
bench-follow: build cluster-bins ## Measure 1000 BundleDeployments following one chart of a Helm repository with a 50 MiB index (docs/bench.md).
	go run ./test/bench -follow 1000 $(BENCH_ARGS)

.PHONY: bench-shards
bench-shards: build cluster-bins ## Measure 1000 BundleDeployments installed by one manager, then 1000 more by 3 shard managers beside it, then idle; and project the shards 50,000 need (docs/bench.md, Shards).
	go run ./test/bench -shards 3 -bundles 1000 -idle 1m $(BENCH_ARGS)

.PHONY: bench-peers
# Flux is measured if it builds; if it does not, make says why and the
# bench runs without it (and says that it did).
bench-peers: build cluster-bins $(HELM) ## make bench, and in the same run the request floor, the Helm 4 SDK, the Helm 4 CLI and Flux (docs/bench.md).
	$(MAKE) flux || echo "bench-peers: Flux could not be built (the error is above); measuring without it"
	go run ./test/bench -peers $(BENCH_ARGS)
