# slipway — see README.md. `make dev` runs everything locally, `make test` runs the tests.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO            ?= go
TOOLS         := $(GO) tool -modfile=hack/tools/go.mod
CONTROLLER_GEN = $(TOOLS) controller-gen
GOLANGCI_LINT  = $(GO) tool -modfile=hack/tools/lint/go.mod golangci-lint
# Control-plane binaries live in a cache outside the repository (see hack/controlplane.sh).
ASSETS_CMD     = hack/controlplane.sh
# Four packages at a time on two cores: the packages mostly wait (on their API servers, controllers,
# containers and browsers): a make test at -p 4 used 1,196 s of CPU in 23 minutes (docs/development.md).
TEST_PARALLEL ?= 4
TEST_FLAGS    ?= -count=1 -timeout=45m -p $(TEST_PARALLEL)
# The longest packages first (measured in make test, longest first), then the rest: go test starts
# packages in the order given, -p at a time, so a long one left to the end runs alone
# (the chaos suites' 3.4 minutes did, last in ./...'s order).
TEST_FIRST    := ./internal/controller/catalyst ./internal/devenv ./internal/manager/rollout/engine \
                 ./internal/manager/ui/browsertest ./test/chaos ./internal/controller/werfbundle ./internal/cli \
                 ./internal/controlplane ./cmd/manager ./internal/manager/realnodetest ./charts
TEST_PKGS     ?= $(TEST_FIRST) ./...
# make test also runs these under the race detector (quick, and concurrent inside the test's own
# process); make race runs the whole suite under it but the packages that drive built binaries,
# containers and a browser (what runs in their process the others cover).
RACE_SHORT    := ./internal/gitsource/... ./internal/operator/... ./internal/registry/... ./internal/manager/ratelimit
RACE_SKIP     := /browsertest$$|/realnodetest$$|/internal/devenv$$|/internal/controlplane$$|/test/chaos$$
DEVENV        := .slipway/bin/devenv
BENCH         ?= .
BENCH_FLAGS   ?= -benchtime=1x -timeout=60m
CHAOS_FLAGS   ?= -count=1 -timeout=120m -v
# The operator's controllers, each with its own generated role under config/rbac/<name>.
CONTROLLERS   := werfbundle webapp catalyst
# Markers a controller's role takes beyond its own package: the admission webhooks' serving
# certificate is WebApp's, the one system that serves webhooks (docs/operator.md, RBAC).
RBAC_PATHS_webapp := paths=./internal/webhookcert/...
# The manager's web UI (web/, Vite + React + TypeScript): npm ci when package-lock.json changes,
# npm run build into the Go package that embeds it when a source changes (docs/development.md).
NPM           ?= npm
WEB_NPM_STAMP := web/node_modules/.slipway-npm-ci
UI_INDEX      := internal/manager/ui/dist/index.html
# Directories too, so adding or removing a file rebuilds.
WEB_SOURCES    = $(shell find web/src web/public 2>/dev/null) web/index.html web/vite.config.ts \
	web/tsconfig.json web/tsconfig.node.json web/package.json

.PHONY: help
help: ## Show the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-z-]+:.*## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Everyday

.PHONY: dev
dev: deps-dev controlplane ui devenv cli-dev ## Run the whole product locally (control plane, registry, operator, samples, operator manager) until Ctrl-C
	KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) $(DEVENV) run

.PHONY: dev-up
dev-up: deps-dev controlplane ui devenv cli-dev ## Start the local environment in the background and return once it is ready
	KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) $(DEVENV) up

.PHONY: dev-down
dev-down: devenv ## Stop the environment started by dev-up
	$(DEVENV) down

.PHONY: devenv
devenv:
	@$(GO) build -o $(DEVENV) ./cmd/devenv

# make dev's CLI, which .slipway/dev/slipway.yaml points at the dev manager (docs/cli.md).
.PHONY: cli-dev
cli-dev:
	@$(GO) build -o .slipway/bin/slipway ./cmd/slipway

.PHONY: deps
deps: ## Install the Debian packages the tests and make dev need, when missing (hack/deps.sh)
	hack/deps.sh

# make test and make dev install the packages they use when one is missing (apt-get, through sudo
# when not root), saying which; with nothing missing this takes some 20 ms and prints nothing.
.PHONY: deps-test deps-dev
deps-test deps-dev: deps-%:
	@hack/deps.sh $*

.PHONY: test
test: deps-test controlplane ui ## Run every test (unit, envtest and full control plane) against real binaries
	cd web && $(NPM) test
	@# hack/gotest.sh keeps the output in .slipway/test.log and, when a test fails, ends with the failures.
	SLIPWAY_CHAOS_SCALE=short KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) GO=$(GO) hack/gotest.sh -tags e2e $(TEST_FLAGS) $(TEST_PKGS)
	@# The short form of make race.
	KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) GO=$(GO) SLIPWAY_TEST_LOG=.slipway/test-race.log hack/gotest.sh -race -tags e2e -count=1 -timeout=20m $(RACE_SHORT)

.PHONY: race
race: deps-test controlplane ui ## Run the tests under the race detector (about 23 minutes; make test runs a short form)
	SLIPWAY_CHAOS_SCALE=short KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) GO=$(GO) SLIPWAY_TEST_LOG=.slipway/race.log hack/gotest.sh \
		-race -tags e2e -count=1 -timeout=90m -p 2 $$($(GO) list ./... | grep -v -E '$(RACE_SKIP)')

.PHONY: bench
bench: controlplane ui ## Run the benchmarks (BENCH=regexp) on the real control plane
	KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) $(GO) test -tags e2e -run '^$$' -bench '$(BENCH)' -benchmem $(BENCH_FLAGS) $(TEST_PKGS)

.PHONY: chaos
chaos: deps-test controlplane ## Run the chaos suites at full size (operator SIGKILLs, an API server restart, registry faults) and print their figures
	SLIPWAY_CHAOS_SCALE=full KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) $(GO) test -tags e2e $(CHAOS_FLAGS) -run '^TestChaos_' ./test/chaos/

# The web UI's screenshots in the docs (docs/images: Fleet in light and dark, a live Canary, Approvals, a CRD diff,
# analysis runs, an operator's health)
# are taken by its browser tests (internal/manager/ui/browsertest) when SLIPWAY_SCREENSHOTS names
# a directory.
.PHONY: screenshots
screenshots: deps-test controlplane ui ## Take the web UI's screenshots in docs/images again (the browser tests against a seeded manager)
	SLIPWAY_SCREENSHOTS=$(CURDIR)/docs/images KUBEBUILDER_ASSETS=$$($(ASSETS_CMD)) $(GO) test -tags browser -count=1 -timeout=20m ./internal/manager/ui/browsertest/

.PHONY: controlplane
controlplane: ## Build etcd, kube-apiserver, controller-manager, scheduler, kubectl and kwok into the cache
	@$(ASSETS_CMD) >/dev/null

##@ Code generation and checks

.PHONY: generate
generate: $(WEB_NPM_STAMP) ## Generate deepcopy code from the API types
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(GO) run ./cmd/manager openapi > api/manager/openapi.json.tmp && mv api/manager/openapi.json.tmp api/manager/openapi.json
	@# The web UI's TypeScript client types, from the OpenAPI document (web/src/api/schema.d.ts).
	cd web && $(NPM) run --silent gen:api

.PHONY: manifests
manifests: ## Generate CRDs, RBAC and webhook configurations from markers into config/ and the chart
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true webhook paths=./api/... paths=./internal/... \
		output:crd:artifacts:config=config/crd/bases output:webhook:artifacts:config=config/webhook
	@# One role per controller, and the common one every operator needs (docs/operator.md, RBAC).
	$(CONTROLLER_GEN) rbac:roleName=slipway-common paths=./internal/operator/... output:rbac:artifacts:config=config/rbac/common
	$(foreach c,$(CONTROLLERS),$(CONTROLLER_GEN) rbac:roleName=slipway-$(c) paths=./internal/controller/$(c) $(RBAC_PATHS_$(c)) \
		output:rbac:artifacts:config=config/rbac/$(c) && ) true
	@# What a preview environment's own ServiceAccount may do in its namespace (docs/catalyst.md, Security model).
	$(CONTROLLER_GEN) rbac:roleName=slipway-catalyst-deployer paths=./internal/controller/catalyst/deployerrole/... \
		output:rbac:artifacts:config=config/rbac/catalyst/deployer
	@# The chart ships the same generated files (docs/chart.md; TestChart_MatchesConfig checks them).
	rm -f charts/slipway/crds/*.yaml && cp config/crd/bases/*.yaml charts/slipway/crds/
	rm -rf charts/slipway/files/rbac
	cd config && for f in $$(find rbac -name role.yaml); do mkdir -p ../charts/slipway/files/$$(dirname $$f) && cp $$f ../charts/slipway/files/$$f; done
	mkdir -p charts/slipway/files/webhook && cp config/webhook/manifests.yaml charts/slipway/files/webhook/
	mkdir -p charts/slipway/files/admission && cp config/manager/catalyst/admission-policies.yaml charts/slipway/files/admission/policies.yaml

.PHONY: verify
verify: generate manifests ## Fail when code generation leaves a diff or go.mod is not tidy; vet and format checks
	@git diff --exit-code -- api config charts web/src/api || { echo "generated files are stale: run make generate manifests and commit"; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- api config charts web/src/api)" || { git ls-files --others --exclude-standard -- api config charts web/src/api; echo "untracked generated files: commit them"; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy and commit"; exit 1; }
	$(GO) vet -tags e2e ./...
	@# No controller, webhook or kit package (tests included) imports the operator's assembler (internal/operator/doc.go).
	GO=$(GO) hack/verify-imports.sh
	@# config/ and the chart agree: the generated files, and what both write by hand (Deployments, Services, bindings).
	@# The manager's chart lints, renders both database modes, refuses what the manager would, and
	@# writes only arguments the manager's own flag sets parse (TestManagerChart_*, docs/manager.md).
	$(GO) test -count=1 -run 'TestChart_MatchesConfig|TestChart_DeploymentsMatchConfig|TestRoles|TestNamespaces|TestKustomize|TestManagerChart_' ./charts/... ./config/...
	@# The CLI is only a client: it links no manager server, engine, store or Helm package (docs/cli.md).
	$(GO) test -count=1 -run 'TestDeps_' ./cmd/slipway

.PHONY: lint
lint: ## go vet and golangci-lint
	$(GO) vet -tags e2e ./...
	$(GOLANGCI_LINT) run --build-tags e2e ./...

##@ Build

.PHONY: build
build: ui ## Build the binaries into bin/ (the manager with the web UI embedded)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o bin/ ./cmd/...

# Container images, built without a container engine by hack/image (internal/ociimage): each
# binary static on an empty base, user 65532, the binary as entrypoint, OCI labels; the Dockerfile
# builds the same with an engine (docker build --target manager). IMAGE_REPO set: push
# <IMAGE_REPO>/slipway-<name>:<IMAGE_TAG> (an index with several IMAGE_PLATFORMS); empty: an OCI
# layout in $(IMAGE_OUT)/oci/slipway-<name>. IMAGE_FLAGS go to hack/image (--insecure, --tarball …).
comma           := ,
IMAGES          ?= operator manager
IMAGE_REPO      ?=
IMAGE_TAG       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_PLATFORMS ?= linux/amd64
IMAGE_OUT       ?= bin/image
IMAGE_FLAGS     ?=

.PHONY: image
image: ui ## Build the operator and manager images without a container engine (IMAGE_REPO=registry/path pushes; see docs/manager.md)
	@for name in $(IMAGES); do \
	  bins=(); \
	  for p in $(subst $(comma), ,$(IMAGE_PLATFORMS)); do \
	    out=$(IMAGE_OUT)/$${p//\//_}/$$name; \
	    echo "building $$out"; \
	    CGO_ENABLED=0 GOOS=$${p%%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags="-s -w" -o $$out ./cmd/$$name; \
	    bins+=(--binary "$$p=$$out"); \
	  done; \
	  $(GO) run ./hack/image "$${bins[@]}" --path /$$name --title slipway-$$name --description "slipway $$name" \
	    --version $(IMAGE_TAG) --revision "$$(git rev-parse HEAD 2>/dev/null || true)" \
	    --created "$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)}" \
	    $(if $(IMAGE_REPO),--push $(IMAGE_REPO)/slipway-$$name:$(IMAGE_TAG),--oci-layout $(IMAGE_OUT)/oci/slipway-$$name --tag $(IMAGE_TAG)) $(IMAGE_FLAGS); \
	done

# The slipway CLI for the platforms users run it on, beside the images: bin/release/slipway-<os>-<arch>.
CLI_PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64

.PHONY: cli-release
cli-release: ## Build the slipway CLI for CLI_PLATFORMS into bin/release/ (see docs/cli.md)
	@for p in $(subst $(comma), ,$(CLI_PLATFORMS)); do \
	  out=bin/release/slipway-$${p%%/*}-$${p#*/}; \
	  echo "building $$out"; \
	  CGO_ENABLED=0 GOOS=$${p%%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags="-s -w" -o $$out ./cmd/slipway || exit 1; \
	done

.PHONY: ui
ui: $(UI_INDEX) ## Build the manager's web UI (web/) into internal/manager/ui/dist, when its sources changed

$(WEB_NPM_STAMP): web/package-lock.json web/package.json
	cd web && $(NPM) ci --no-audit --no-fund
	@touch $@

$(UI_INDEX): $(WEB_NPM_STAMP) $(WEB_SOURCES)
	cd web && $(NPM) run build

.PHONY: clean
clean: ## Remove build output and local dev state
	rm -rf bin .slipway
