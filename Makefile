# gpuctl — run `make` for the list of targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

GO       ?= go
export GOTOOLCHAIN := local
# go-nvml's headers mark many NVML calls deprecated; the node labeler uses none of them.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
# go-nvml leaves NVML's symbols undefined; bind lazily so cgo binaries and test binaries start
# without the NVIDIA driver (the linker adds -z now to binaries that import plugin).
export CGO_LDFLAGS ?= -Wl,-z,lazy
BIN      := bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/gpuctl/gpuctl/internal/version.Version=$(VERSION)
PKGS     := ./...
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: help
help: ## show this list
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/gpuctl and bin/gpuctl-reconciler (pure Go, CGO_ENABLED=0)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/gpuctl ./cmd/gpuctl-reconciler

# The local cluster's helper (hack/cluster), built with the flags of `build` so that the two share
# Go's build cache: on a fresh machine `go run` would compile client-go and the rest once more.
CLUSTER_HELPER := .cache/bin/cluster
.PHONY: cluster-helper
cluster-helper:
	@CGO_ENABLED=0 $(GO) build -trimpath -o $(CLUSTER_HELPER) ./hack/cluster

.PHONY: build-node-labeler
build-node-labeler: ## build bin/gpuctl-node-labeler (cgo, go-nvml; lazy binding: starts without the NVIDIA driver)
	CGO_ENABLED=1 $(GO) build -trimpath -ldflags '$(LDFLAGS) -extldflags=-Wl,-z,lazy' -o $(BIN)/gpuctl-node-labeler ./cmd/gpuctl-node-labeler

.PHONY: build-cross
build-cross: ## build gpuctl for linux/amd64 and darwin/arm64 into bin/
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gpuctl-linux-amd64 ./cmd/gpuctl
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gpuctl-darwin-arm64 ./cmd/gpuctl

.PHONY: image
image: ## build the images into bin/images/ without a container engine (hack/image; names in hack/image/images.env): gpuctl-reconciler and gpuctl for linux/amd64 and linux/arm64 (IMAGE_PLATFORMS), gpuctl-node-labeler for linux/amd64
	$(GO) run ./hack/image --version $(VERSION) --platforms $(IMAGE_PLATFORMS)

.PHONY: fmt
fmt: ## format the Go code
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet, and fail on unformatted files
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: lint
lint: vet ## static checks (go vet + gofmt)

.PHONY: test
test: vet chromium ## every test, unit and integration (starts the local cluster; builds it the first time)
	$(GO) test -count=1 $(PKGS)
	@shot=$${GPUCTL_ARTIFACTS:-_artifacts}/ui.png; if [ -f "$$shot" ]; then \
		set -- $$(od -An -tu1 -j16 -N8 "$$shot"); \
		echo "ui screenshot: $$shot ($$(( $$1<<24 | $$2<<16 | $$3<<8 | $$4 ))x$$(( $$5<<24 | $$6<<16 | $$7<<8 | $$8 )), $$(wc -c <"$$shot" | tr -d ' ') bytes)"; \
	else echo "ui screenshot: none ($$shot missing)"; fi
	$(MAKE) --no-print-directory build-cross

.PHONY: chromium
chromium: ## install Debian's chromium for the web page's browser test (apt-get, first time only)
	@hack/chromium.sh >/dev/null

.PHONY: fuzz
fuzz: ## fuzz the gpuctl parser for 60 s (FUZZTIME=60s)
	$(GO) test ./render/ -run '^$$' -fuzz FuzzParseFile -fuzztime $${FUZZTIME:-60s}

.PHONY: bench
bench: ## benchmarks against their bars: render, SOPS decryption of 1,000 Secrets, local source, Git checkout, daemon latency and memory (a restart's prune of 10,000 too), API write to Job, drift latency and a 10-minute soak (GPUCTL_SOAK), get jobs and logs -f vs kubectl, gpuctl top over 1,000 GPU pods vs its bare PromQL, Kueue admission after a sync, engine vs Flux and kubectl
	$(GO) test ./render/ -run '^$$' -bench . -benchmem -count 1
	$(GO) test ./secrets/sops/ -run '^$$' -bench . -benchmem -count 1
	$(GO) test ./sources/local/ -run '^$$' -bench . -benchmem -count 1
	$(GO) test ./sources/git/ -run '^$$' -bench . -benchtime 1x -count 1
	$(GO) test ./review/ -run '^$$' -bench . -benchmem -count 1
	$(GO) test ./reconciler/daemon/ -run '^$$' -bench . -benchtime 1x -timeout 40m
	$(GO) test ./cmd/gpuctl-reconciler/app/ -run '^$$' -bench . -benchtime 1x -timeout 10m
	$(GO) test ./drift/detector/ -run '^$$' -bench . -benchtime 1x -timeout 40m
	GPUCTL_WITH_KUBECTL=1 hack/cluster-tools.sh >/dev/null
	$(GO) test ./test/e2e/ -run '^$$' -bench . -benchtime 1x -timeout 30m
	$(GO) test ./test/queueing/ -run '^$$' -bench . -benchtime 1x -timeout 10m
	cd bench && GOFLAGS=-mod=mod $(GO) run . -n 100,1000,5000

.PHONY: demo
demo: ## build, start the local cluster, run gpuctl-reconciler against examples/ and show what it did
	hack/demo.sh

.PHONY: demo-down
demo-down: ## stop the demo's reconciler and the local cluster
	-@[ -f .cache/demo/reconciler.pid ] && kill $$(cat .cache/demo/reconciler.pid) 2>/dev/null; rm -f .cache/demo/reconciler.pid
	-@[ -f .cache/demo/gpu-metrics.pid ] && kill $$(cat .cache/demo/gpu-metrics.pid) 2>/dev/null; rm -f .cache/demo/gpu-metrics.pid
	@$(MAKE) --no-print-directory cluster-helper
	$(CLUSTER_HELPER) down --dir .cache/cluster

.PHONY: demo-fleet
demo-fleet: ## the fleet on three local clusters (hub, a MultiKueue manager; gpu-a, gpu-b): a reconciler --cluster each over examples-fleet/, jobs of hub run in the worker with room
	hack/demo-fleet.sh

.PHONY: demo-fleet-down
demo-fleet-down: ## stop demo-fleet's reconcilers and its three clusters
	-@for c in hub gpu-a gpu-b; do f=.cache/demo-fleet/reconciler-$$c.pid; [ -f $$f ] && kill $$(cat $$f) 2>/dev/null; rm -f $$f; done; true
	@$(MAKE) --no-print-directory cluster-helper
	for c in hub gpu-a gpu-b; do $(CLUSTER_HELPER) down --dir .cache/demo-fleet/$$c; done

.PHONY: cluster-up
cluster-up: cluster-helper ## start the local cluster (fake GPU nodes) in .cache/cluster; prints its KUBECONFIG (KUEUE=1: with Kueue)
	$(CLUSTER_HELPER) up --dir .cache/cluster$(if $(filter 1,$(KUEUE)), --kueue)

.PHONY: cluster-down
cluster-down: cluster-helper ## stop the local cluster
	$(CLUSTER_HELPER) down --dir .cache/cluster

.PHONY: examples
examples: build ## validate examples/
	$(BIN)/gpuctl validate examples/

.PHONY: golden
golden: ## rewrite render/testdata golden files after an intended change
	$(GO) test ./render/ -run TestGolden -update
