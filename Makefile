# Waterline. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
GO ?= go
BINARIES ?= waterline waterline-scheduler waterline-manager waterline-agent
K8S_VERSION := $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' go.mod | head -1)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/waterline-dev/waterline/pkg/version.gitVersion=$(VERSION) \
	-X github.com/waterline-dev/waterline/pkg/version.gitCommit=$(COMMIT) \
	-X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION)))
# Integration tests start real control planes; give slow machines room.
TEST_TIMEOUT ?= 40m
TEST_FLAGS ?=
# Integration tests wait on control planes more than they compute.
TEST_PARALLEL ?= 4

##@ Try it

.PHONY: demo
demo: ## Simulate a day of a 100-node cluster with plain Kubernetes (two ways) and Waterline; prints the summary and the report's path
	$(GO) run ./cmd/waterline sim --out _output/demo

.PHONY: local-up
local-up: tools build ## Run a local cluster (etcd, apiserver, controller-manager, kwok nodes, Waterline); Ctrl-C stops it
	hack/local-up.sh

##@ Develop

.PHONY: build
build: ## Build Waterline's binaries into bin/
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

.PHONY: tools
tools: ## Build the control plane, kwok and code generators from source into bin/ (cached by version)
	hack/build-tools.sh

.PHONY: generate
generate: tools ## Regenerate deepcopy, CRDs, RBAC and the typed client
	hack/update-codegen.sh

.PHONY: manifests
manifests: generate ## Alias of generate: CRDs and RBAC come out of the same run

.PHONY: verify
verify: tools ## Fail if generated code is stale, code is not gofmt'ed, go vet complains or go.mod is untidy
	hack/verify.sh

.PHONY: test-deps
test-deps: ## Install what some tests need besides Go (Debian's chromium, where root may)
	hack/install-test-deps.sh

.PHONY: test
test: tools test-deps ## Run unit and integration tests (real etcd, kube-apiserver, kwok; real cgroups where allowed)
	$(GO) test -timeout $(TEST_TIMEOUT) -parallel $(TEST_PARALLEL) $(TEST_FLAGS) ./...

.PHONY: test-unit
test-unit: ## Run the tests that need no control plane
	$(GO) test -short $(TEST_FLAGS) $$($(GO) list ./... | grep -v /test/)

.PHONY: bench
bench: ## Run every benchmark once (numbers go in the package READMEs)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x $(TEST_FLAGS) ./...

.PHONY: update-k8s
update-k8s: ## Move to another Kubernetes release: make update-k8s V=v1.36.4
	hack/update-k8s.sh $(V)

.PHONY: clean
clean: ## Remove bin/ links and _output/ (the tool cache outside the clone stays)
	rm -rf $(BIN) _output

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)
