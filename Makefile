# apichain developer tasks. `make test` is what CI runs.
SHELL := /bin/bash
BIN := $(CURDIR)/.bin
export PATH := $(BIN):$(PATH)

BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPC_GATEWAY_VERSION := v2.33.0
X_TOOLS_VERSION := v0.52.0
# deepcopy-gen, at the release of the k8s.io modules, for the Go types apichain keeps itself.
CODE_GENERATOR_VERSION := v0.37.2
# googleapis protos (google/api/*.proto) come from this module's third_party folder via the
# Go module proxy, so codegen needs no other network source.
GOOGLEAPIS_MODULE := github.com/grpc-ecosystem/grpc-gateway@v1.16.0

MODULES := gen pkg services/gateway services/core services/extensions services/aggregator cmd/apichain cmd/apichain-bench deploy/images test/e2e
PKGS := $(addprefix ./,$(addsuffix /...,$(MODULES)))

.PHONY: compose-bin images up down swarm-up swarm-down all build test test-short vet deadcode fmt lint breaking generate check-generate tools googleapis bench bench-startup chaos controller-runtime-suites run clean

all: build

build:
	go build $(PKGS)

run:
	go run ./cmd/apichain

test:
	@docker info >/dev/null 2>&1 || echo "*** SKIPPED: docker info failed, so the docker compose tests (TestCompose*: the stack, etcd leader loss, the gateways behind the balancer, the NATS cluster, the swarm stack) will skip: they need a Docker engine ***"
	go test -count=1 -timeout 45m $(PKGS)

test-short:
	go test -short -count=1 $(PKGS)

vet:
	go vet $(PKGS)

# No function unreachable from a main outside tests. Test-helper packages (named *test, as
# net/http/httptest) are reached only from tests, so they are left out.
DEADCODE_PKGS := $(addprefix ./,$(addsuffix /...,$(filter-out test/e2e,$(MODULES))))
deadcode: $(BIN)/deadcode
	@out=$$(deadcode $(DEADCODE_PKGS) | grep -v '^[^:]*test/[^/]*\.go:' || true); \
	if [ -n "$$out" ]; then echo "unreachable functions:"; echo "$$out"; exit 1; fi; echo "deadcode: none"

$(BIN)/deadcode:
	GOBIN=$(BIN) go install golang.org/x/tools/cmd/deadcode@$(X_TOOLS_VERSION)

fmt:
	gofmt -l -w $(MODULES)

bench:
	go test -run '^$$' -bench . ./pkg/... ./services/gateway/...
	go test -run '^$$' -bench . -benchtime 10x ./test/e2e/...

bench-startup:
	go test -run '^$$' -bench StartupToReady -benchtime 20x ./test/e2e/
	go test -run '^$$' -bench Start -benchtime 20x ./cmd/apichain/apichaintest/

# The chaos runs we keep, on the compose stack (also in make test): etcd's leader SIGKILLed five
# times, rolling restarts of core, extensions and aggregator replicas, a SIGKILLed core replica
# and NATS stopped, all under load, counting failed and lost writes.
chaos:
	go test -count=1 -timeout 60m -v -run 'TestCompose' ./test/e2e/

# controller-runtime's own envtest suites against the envtest profile (opt-in: a long build).
controller-runtime-suites:
	test/controller-runtime/run.sh

tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/protoc-gen-grpc-gateway $(BIN)/deepcopy-gen

$(BIN)/buf:
	GOBIN=$(BIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(BIN)/protoc-gen-grpc-gateway:
	GOBIN=$(BIN) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
$(BIN)/deepcopy-gen:
	GOBIN=$(BIN) go install k8s.io/code-generator/cmd/deepcopy-gen@$(CODE_GENERATOR_VERSION)

googleapis:
	@dir=$$(cd / && GOWORK=off GOFLAGS=-mod=mod go mod download -json $(GOOGLEAPIS_MODULE) | sed -n 's/.*"Dir": "\(.*\)",/\1/p'); \
	rm -rf third_party/googleapis; mkdir -p third_party/googleapis/google/api; \
	cp $$dir/third_party/googleapis/LICENSE third_party/googleapis/; \
	cp $$dir/third_party/googleapis/google/api/{annotations,http,httpbody}.proto third_party/googleapis/google/api/; \
	chmod -R u+w third_party/googleapis

lint: tools googleapis
	buf lint
	buf format -d --exit-code proto

# The gRPC contract stays compatible (docs/grpc.md): buf's breaking-change rules (buf.yaml) against
# the last release tag (v*), else the previous commit, so a change that would break a service of
# the previous version running next to the new one fails CI. The other side is checked out into a
# temporary directory with the same googleapis, offline.
BREAKING_AGAINST ?= $(shell git describe --tags --abbrev=0 --match 'v*' 2>/dev/null || echo HEAD~1)
breaking: tools googleapis
	@if ! git rev-parse -q --verify "$(BREAKING_AGAINST)^{commit}" >/dev/null; then \
		echo "*** SKIPPED: buf breaking: no $(BREAKING_AGAINST) in this clone to compare with ***"; exit 0; fi; \
	dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	git archive "$(BREAKING_AGAINST)" buf.yaml proto | tar -x -C "$$dir"; \
	cp -r third_party "$$dir/"; \
	echo "buf breaking against $(BREAKING_AGAINST) ($$(git rev-parse --short $(BREAKING_AGAINST)))"; \
	buf breaking --against "$$dir"

generate: tools googleapis
	buf format -w proto
	buf lint
	rm -rf gen/apichain
	buf generate
	cd pkg && go generate ./openapi
	cd pkg && deepcopy-gen --output-file zz_generated.deepcopy.go --go-header-file /dev/null ./apiregistration

# CI: the committed generated code must be what `make generate` makes.
check-generate: generate
	git diff --exit-code -- gen proto pkg/openapi/zz_generated.tags.go pkg/apiregistration
	test -z "$$(git status --porcelain -- gen proto pkg/openapi pkg/apiregistration)"

clean:
	rm -rf $(BIN) third_party/googleapis

# --- docker compose (deploy/compose): static binaries on scratch images, no registry needed.
# compose v2 ("docker compose") when present, else Debian's docker-compose (v1.29); both read
# the same compose.yaml.
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
COMPOSE_DIR := deploy/compose
# Images record their commit (-buildvcs: go.work builds stamp none by default) and build date.
BUILD_DATE := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
STATIC := CGO_ENABLED=0 go build -trimpath -buildvcs=$(shell git rev-parse --git-dir >/dev/null 2>&1 && echo true || echo false) \
	-ldflags='-s -w -X github.com/apichain/apichain/pkg/version.buildDate=$(BUILD_DATE)'

compose-bin:
	mkdir -p $(COMPOSE_DIR)/bin
	$(STATIC) -o $(COMPOSE_DIR)/bin/ ./services/gateway ./services/core ./services/extensions ./services/aggregator
	$(STATIC) -o $(COMPOSE_DIR)/bin/etcd ./deploy/images/etcd
	$(STATIC) -o $(COMPOSE_DIR)/bin/nats-server ./deploy/images/nats
	deploy/images/haproxy/rootfs.sh $(COMPOSE_DIR)/bin/haproxy-root
	# Jaeger and Prometheus from their published modules at the versions deploy/tools pins, each
	# in a module of its own outside the workspace so their dependencies move nothing of ours.
	cd deploy/tools/jaeger && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(CURDIR)/$(COMPOSE_DIR)/bin/jaeger github.com/jaegertracing/jaeger/cmd/jaeger
	cd deploy/tools/prometheus && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(CURDIR)/$(COMPOSE_DIR)/bin/prometheus github.com/prometheus/prometheus/cmd/prometheus

images: compose-bin
	cd $(COMPOSE_DIR) && $(COMPOSE) build

# up starts the stack, waits for every gateway's /readyz and writes the admin kubeconfig, whose
# server is the balancer in front of them.
up: images
	cd $(COMPOSE_DIR) && $(COMPOSE) up -d
	@cd $(COMPOSE_DIR) && for i in $$(seq 180); do \
	  cids=$$($(COMPOSE) ps -q gateway); \
	  [ -n "$$cids" ] && [ -z "$$(docker inspect -f '{{.State.Health.Status}}' $$cids | grep -v '^healthy$$')" ] && break; sleep 1; \
	done; \
	docker cp $$(echo $$cids | cut -d' ' -f1):/data/admin.kubeconfig admin.kubeconfig && \
	echo "apichain is up: kubectl --kubeconfig $(COMPOSE_DIR)/admin.kubeconfig get --raw '/readyz?verbose'"; \
	echo "Prometheus: http://127.0.0.1:$${APICHAIN_PROMETHEUS_PORT:-9090} (alerts at /alerts); Jaeger: http://127.0.0.1:$${APICHAIN_JAEGER_PORT:-16686}"

down:
	cd $(COMPOSE_DIR) && $(COMPOSE) down -v --remove-orphans

# The same images as a swarm stack (deploy/swarm; docker swarm init first).
swarm-up: images
	deploy/swarm/up.sh

swarm-down:
	deploy/swarm/down.sh
