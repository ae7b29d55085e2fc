# lakeweed — SeaweedFS with storage-side Parquet pushdown for Iceberg tables.
SHELL := /bin/bash
GO ?= go
BIN := bin/weed
TOOLS := $(CURDIR)/.tools
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -s -w -X github.com/lakeweed/seaweedfs/weed/pushdown/version.Commit=$(COMMIT)
# What bin/weed is built from: its Go sources, the module files and the commit
# it reports (bin/.commit changes only when the commit does).
GO_SOURCES := $(shell find weed -name '*.go' -not -name '*_test.go') go.mod go.sum
# Unit tests first, then the real-cluster integration tests under test/.
TEST_TIMEOUT ?= 25m

.PHONY: all build run test unit integration bench proto vet clean compose-check fuzz

all: build

build: $(BIN)

# Linked only when a source, the module files or the commit changed: `make run`
# starts at once when nothing did.
$(BIN): $(GO_SOURCES) bin/.commit
	@mkdir -p bin
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./weed

bin/.commit: FORCE
	@mkdir -p bin
	@[ "$$(cat $@ 2>/dev/null)" = "$(COMMIT)" ] || echo "$(COMMIT)" > $@

FORCE:

# One process: master, volume, filer, S3 gateway, Iceberg REST catalog and both
# pushdown services, data in ./data. Loads demo.events on first start.
run: build
	./scripts/run-demo.sh

test: build
	$(GO) vet ./...
	WEED_BINARY=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	FUZZTIME=2s FUZZ_PACKAGES="$(REQUEST_FUZZ)" FUZZ_ROTATE=1 ./scripts/fuzz.sh

# `make test` fuzzes the decoders of what a caller sends (SQL included) and one payload
# reader chosen by the commit (2s each); every target's seed corpus
# (payload readers too) runs in `go test`. `make fuzz`
# fuzzes every target (request decoders, payload readers) for FUZZTIME each.
REQUEST_FUZZ := access descriptor predicate rowbits sqlpred sqlstmt tables
FUZZTIME ?= 30s
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

unit:
	$(GO) test -count=1 -short ./weed/...

integration: build
	WEED_BINARY=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./test/...

bench: build
	WEED_BINARY=$(CURDIR)/$(BIN) ./scripts/bench.sh

proto:
	@command -v protoc >/dev/null || { echo "protoc is missing: apt-get install protobuf-compiler"; exit 1; }
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	mkdir -p weed/pb/pushdown_pb
	PATH=$(TOOLS):$$PATH protoc -I weed/pb weed/pb/pushdown.proto \
		--go_out=weed/pb/pushdown_pb --go_opt=paths=source_relative \
		--go-grpc_out=weed/pb/pushdown_pb --go-grpc_opt=paths=source_relative

compose-check:
	docker compose -f docker/compose.yml config >/dev/null && echo "docker/compose.yml is valid"

clean:
	rm -rf bin .tools
