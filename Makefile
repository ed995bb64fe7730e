# The one command CI and contributors run: `make test`.
# It needs Go, a redis-server binary, a prometheus binary, protoc and buf: the
# tests start their own redis-server processes (single nodes and a 6-node
# cluster) on loopback, a Prometheus server that scrapes the metrics and
# evaluates the dashboard's queries, and protoc and buf with the plugins
# that the .proto modules require.

.PHONY: test vet fresh redis-server faketime prometheus protoc buf demo

# Modules of their own, tested with the root one: the example services,
# the metrics, gRPC and Connect adapters, the .proto option with its protoc
# plugin, and the golangci-lint plugin, whose dependencies the core must not
# carry. The lint plugin's test builds golangci-lint from the Go module
# proxy (minutes on a cold build cache, seconds on a warm one).
MODULES := examples examples/verifyrpc extra/ratelimitprom extra/ratelimitotel extra/ratelimitgrpc extra/ratelimitconnect extra/ratelimitproto extra/ratelimitlint

# go test's timeout only catches a hung test. Its default, 10 minutes per
# package, is no bound for internal/generate, whose end-to-end tests build
# generated packages (for GOARCH=386 too) and take 6 to 10 minutes on a
# loaded 2-core machine whose build cache is empty.
TEST_TIMEOUT := 30m

test: redis-server faketime prometheus protoc buf vet
	go test -race -timeout $(TEST_TIMEOUT) ./...
	@for m in $(MODULES); do echo "go test -race ./... in $$m"; (cd $$m && go test -race -timeout $(TEST_TIMEOUT) ./...) || exit 1; done

vet:
	go vet ./...
	@for m in $(MODULES) bench; do (cd $$m && go vet ./...) || exit 1; done

demo:
	go -C examples run ./verifycode

# Run `make test` as a new machine would: in a clone of HEAD (committed
# work only), with empty Go build and module caches, so that a file not
# committed or a module the proxy must serve fails here before it fails CI.
# It installs what is missing as `make test` does; to try that step too,
# remove a package first (apt-get remove -y libprotobuf-dev, say).
fresh:
	@dir=$$(mktemp -d) && git clone -q . $$dir/src && echo "make test in $$dir/src, with empty Go caches" && \
	GOCACHE=$$dir/gocache GOMODCACHE=$$dir/gomod CI=true $(MAKE) -C $$dir/src test; \
	rc=$$?; GOMODCACHE=$$dir/gomod go clean -modcache; rm -rf $$dir; exit $$rc

# Install redis-server (which brings redis-cli) when it is missing: with
# apt-get when running as root, otherwise print the exact command.
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "redis-server not found: installing it with apt-get"; \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server; \
		else \
			echo "redis-server not found. The tests start real Redis servers; install it with:" >&2; \
			echo "    sudo apt-get install -y redis-server     # Debian/Ubuntu" >&2; \
			echo "    brew install redis                       # macOS" >&2; \
			exit 1; \
		fi; \
	fi

# Install libfaketime when it is missing, as redis-server above: the
# failover tests start redis-servers whose clocks are offset from the
# machine's (redistest.FakeTime).
FAKETIME_LIBS := /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 /usr/local/lib/faketime/libfaketime.so.1
faketime:
	@found=; for f in $(FAKETIME_LIBS); do [ -e "$$f" ] && found=$$f; done; \
	if [ -z "$$found" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "libfaketime not found: installing faketime with apt-get"; \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends faketime; \
		else \
			echo "libfaketime not found. The failover tests offset redis-server's clock with it; install it with:" >&2; \
			echo "    sudo apt-get install -y faketime         # Debian/Ubuntu" >&2; \
			exit 1; \
		fi; \
	fi

# Install prometheus when it is missing, as redis-server above.
prometheus:
	@if ! command -v prometheus >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "prometheus not found: installing it with apt-get"; \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; \
		else \
			echo "prometheus not found. The metrics tests start a real Prometheus; install it with:" >&2; \
			echo "    sudo apt-get install -y prometheus       # Debian/Ubuntu" >&2; \
			echo "    brew install prometheus                  # macOS" >&2; \
			exit 1; \
		fi; \
	fi

# Install protoc when it is missing, or when it cannot find the well-known
# types' .proto files (google/protobuf/descriptor.proto, which limit.proto
# imports): on Debian they are libprotobuf-dev's, a package that
# protobuf-compiler only recommends. As redis-server above.
WKT_PROBE := import "google/protobuf/descriptor.proto";
protoc:
	@probe=$$(mktemp -d) && printf 'syntax = "proto3";\n%s\n' '$(WKT_PROBE)' > $$probe/wkt.proto; \
	if command -v protoc >/dev/null 2>&1 && protoc -I $$probe --descriptor_set_out=/dev/null $$probe/wkt.proto >/dev/null 2>&1; then \
		rm -rf $$probe; exit 0; \
	fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "protoc or the well-known types' .proto files not found: installing protobuf-compiler and libprotobuf-dev with apt-get"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends protobuf-compiler libprotobuf-dev || exit 1; \
	else \
		echo "protoc, or the well-known types' .proto files it imports (google/protobuf/descriptor.proto), not found." >&2; \
		echo "The .proto tests run the real protoc; install both with:" >&2; \
		echo "    sudo apt-get install -y protobuf-compiler libprotobuf-dev   # Debian/Ubuntu" >&2; \
		echo "    brew install protobuf                                       # macOS" >&2; \
		rm -rf $$probe; exit 1; \
	fi; \
	if ! protoc -I $$probe --descriptor_set_out=/dev/null $$probe/wkt.proto; then \
		echo "protoc still cannot import google/protobuf/descriptor.proto: see docs/proto.md" >&2; rm -rf $$probe; exit 1; \
	fi; \
	rm -rf $$probe

# Install buf when it is missing: npm's @bufbuild/buf ships the binary.
BUF_VERSION := 1.75.0
buf:
	@if ! command -v buf >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v npm >/dev/null 2>&1; then \
			echo "buf not found: installing @bufbuild/buf@$(BUF_VERSION) with npm"; \
			npm install -g --silent @bufbuild/buf@$(BUF_VERSION); \
		else \
			echo "buf not found. The .proto tests run the real buf generate; install it with:" >&2; \
			echo "    sudo npm install -g @bufbuild/buf@$(BUF_VERSION)" >&2; \
			echo "    brew install bufbuild/buf/buf             # macOS" >&2; \
			exit 1; \
		fi; \
	fi
