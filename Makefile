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
# go test starts packages in the order given, two at a time on a 2-core
# machine: the packages that run for minutes go first, so the quick ones
# fill the other slot beside them instead of delaying them (./... adds the
# rest once; go test runs a package named twice once).
TEST_PKGS ?= ./test/integration ./test/e2e ./test/bench/colocation ./test/bench/controlplane ./test/bench/scheduler ./pkg/kwokagent ./...

##@ Try it

.PHONY: demo
demo: ## Simulate a day of a 100-node cluster with plain Kubernetes (two ways) and Waterline; prints the summary and the report's path
	$(GO) run ./cmd/waterline sim --out _output/demo

.PHONY: local-up
local-up: tools build ## Run a local cluster (etcd, apiserver, controller-manager, kwok nodes, a real node where root may, Waterline); Ctrl-C stops it
	hack/local-up.sh

##@ Develop

.PHONY: build
build: ## Build Waterline's binaries into bin/
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

.PHONY: images
images: ## Build each binary's image (static, as the Dockerfile builds it) plus the test node's busybox and pause images as tarballs in _output/images; IMPORT=<containerd.sock> also imports them
	$(GO) run ./hack/image --out $(CURDIR)/_output/images --ldflags '$(LDFLAGS)' $(if $(IMPORT),--import $(IMPORT))

.PHONY: tools
tools: ## Build the control plane, kwok and code generators from source into bin/ (cached by version)
	hack/build-tools.sh

.PHONY: generate
generate: tools ## Regenerate deepcopy, CRDs, RBAC, the typed client, and the chart's CRDs and values-schema definitions
	hack/update-codegen.sh

.PHONY: manifests
manifests: generate ## Alias of generate: CRDs and RBAC come out of the same run

.PHONY: verify
verify: tools ## Fail if generated code is stale, code is not gofmt'ed, a licence header is missing, golangci-lint or go vet complain, the chart does not lint, or go.mod is untidy
	hack/verify.sh

# What the tests run: the control plane (and the stock kube-scheduler the
# scheduler benchmark compares with; the oldest supported kube-apiserver),
# the real node's kubelet, kwok and helm. The code generators and
# golangci-lint are for generate and verify.
TEST_TOOLS := etcd kube-apiserver kube-apiserver-1.34 kube-controller-manager kube-scheduler kubectl kubelet kwok helm promtool

.PHONY: test-tools
test-tools: ## Build only the tools the tests run (cached like the rest)
	hack/build-tools.sh $(TEST_TOOLS)

.PHONY: test-deps
test-deps: ## Install what some tests need besides Go (Debian's chromium, containerd, runc, busybox-static, where root may)
	hack/install-test-deps.sh

.PHONY: test
test: test-tools test-deps ## Run unit, integration and real-node e2e tests; prints every skip with its reason and a pass/fail/skip count
	@$(GO) build -o $(BIN)/testsum ./hack/testsum
	$(GO) test -json -timeout $(TEST_TIMEOUT) -parallel $(TEST_PARALLEL) $(TEST_FLAGS) $(TEST_PKGS) 2>&1 | $(BIN)/testsum

.PHONY: test-unit
test-unit: ## Run the tests that need no control plane
	$(GO) test -short $(TEST_FLAGS) $$($(GO) list ./... | grep -v /test/)

# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Fuzz every parser of user input, one target at a time for FUZZTIME each (make test runs their seed corpora)
	@grep -rl --include='*_test.go' --exclude-dir=_output '^func Fuzz' . | sort | while read -r f; do \
		pkg=./$$(dirname "$${f#./}"); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
			echo "== $$pkg $$fn ($(FUZZTIME))"; \
			$(GO) test "$$pkg" -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) || exit 1; \
		done; \
	done

.PHONY: bench
bench: ## Run every benchmark once (numbers go in the package READMEs)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x $(TEST_FLAGS) ./...

.PHONY: bench-agent
bench-agent: test-tools ## The whole agent's CPU per 1 s cycle and memory with 200 pods on real cgroups (root; about 3 minutes; COSTTEST_PPROF_DIR=DIR also saves profiles)
	COSTTEST=1 $(GO) test -count=1 -timeout 10m -run '^TestAgentCostRealCgroups200Pods$$' -v ./test/integration/

.PHONY: soak
SOAK ?= 30m
soak: test-tools test-deps ## The whole system on the real node for SOAK (30m) under churning pods and throttling; fails when memory, goroutines, open files or state grow (root)
	WATERLINE_SOAK=$(SOAK) $(GO) test -count=1 -timeout 24h -run '^TestSoak$$' -v ./test/e2e/

.PHONY: bench-scheduler
bench-scheduler: test-tools ## Live scheduler throughput and CPU per pod: deployed profile, default plugins, stock kube-scheduler, rotating (1,000 nodes, 4,000 pods, 3 runs each; SCHEDBENCH_NODES/PODS/REPEATS override); report in _output/bench-scheduler
	SCHEDBENCH_FULL=1 $(GO) test -count=1 -timeout 60m -run '^TestSchedulerThroughput$$' -v ./test/bench/scheduler/ 2>&1 | grep --line-buffered -v '^        [EIW][0-9]\{4\} '

.PHONY: bench-controlplane
bench-controlplane: tools ## The control plane at 5,000 nodes: kwok fleet of simulated agents + waterline-manager vs kubelet's Lease/Node status writes, alternating (CPBENCH_NODES/WINDOW_SECONDS/REPEATS/SETUP_MINUTES override; 1,000 nodes took 14 min on the shared 2-core VM, see the README); report in _output/bench-controlplane
	CPBENCH_FULL=1 $(GO) test -count=1 -timeout 60m -run '^TestFleet$$' -v ./test/bench/controlplane/ 2>&1 | grep --line-buffered -v '^        [EIW][0-9]\{4\} '

.PHONY: bench-colocation
bench-colocation: test-tools test-deps ## Prod latency beside Batch work on a real node: alone, plain Kubernetes, Waterline, Waterline without throttling, Waterline under memory pressure (about 14 min); report and calibration.json in _output/bench-colocation
	COLOBENCH_FULL=1 $(GO) test -count=1 -timeout 30m -run '^TestColocation$$' -v ./test/bench/colocation/

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
