# Lookout's build and test entry points. `make test` is the README's test
# command and what CI runs (with `make fuzz`).
GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2
# Every fuzz target shares one budget (seconds in all), so adding a target
# does not lengthen CI; FUZZTIME, when set, gives each target that instead.
FUZZBUDGET ?= 900
FUZZTIME  ?=
# Go's fuzzer minimises each new interesting input for up to 60 s by default,
# during which it runs nothing else: with corpus-sized seeds that ate whole
# runs (24 executions in 60 s). A short bound keeps the time for fuzzing.
FUZZMINIMIZETIME ?= 3s
NPM       ?= npm

# Fuzz targets: package and target name.
FUZZ_TARGETS := \
	./internal/formats/invariant:FuzzDecode \
	./internal/formats/snorkel:FuzzDecode \
	./internal/formats/mlflow:FuzzDecode \
	./internal/formats/bedrock:FuzzDecode \
	./internal/formats/otlp:FuzzDecode \
	./internal/formats/otlp:FuzzDecodeBinary \
	./internal/formats/otlp:FuzzDecodeTraces \
	./internal/formats:FuzzDetect \
	./internal/trace:FuzzParseAddress \
	./internal/trace:FuzzCanonical \
	./internal/policy:FuzzParse \
	./internal/policy:FuzzAnalyze \
	./internal/policy/detectors:FuzzDetectors \
	./internal/python:FuzzAnalyze \
	./internal/jsonscan:FuzzScanner \
	./internal/jsonscan:FuzzSkip \
	./internal/eval:FuzzParseCriteria \
	./internal/search:FuzzParse \
	./internal/search:FuzzWalkStrings \
	./internal/search:FuzzMeta \
	./internal/search:FuzzLower \
	./internal/gateway:FuzzParseRequest \
	./internal/gateway:FuzzStream \
	./internal/gateway:FuzzRequestCache \
	./internal/gateway/mcp:FuzzParse \
	./internal/gateway/mcp:FuzzSession

.PHONY: all build test lint fuzz bench tools clean mcp-deps sdk-deps

all: build

# A static binary (no cgo: SQLite is pure Go): it runs anywhere and starts
# 3-5 ms sooner than a dynamically linked one (bench/README.md, Guardrails).
# -buildvcs=auto stamps the commit for `lookout version` from a git checkout
# even where GOFLAGS says -buildvcs=false. The Dockerfile builds the same.
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o lookout ./cmd/lookout

tools:
	@test -x $(GOBIN)/staticcheck && $(GOBIN)/staticcheck -version | grep -q '$(STATICCHECK_VERSION:v%=%)' || \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: tools
	@fmt=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$fmt" ]; then echo "gofmt needed:"; echo "$$fmt"; exit 1; fi
	$(GO) vet ./...
	$(GOBIN)/staticcheck ./...

test: lint mcp-deps sdk-deps
	$(GO) test -race -count=1 -timeout 25m ./...

# The real MCP client and servers (npm) that the MCP gateway's tests run
# with node: `lookout mcp` and /api/v1/gateway/mcp (cmd/lookout/mcp_test.go).
MCP_TESTDATA := cmd/lookout/testdata/mcp

$(MCP_TESTDATA)/node_modules/.package-lock.json: $(MCP_TESTDATA)/package.json $(MCP_TESTDATA)/package-lock.json
	cd $(MCP_TESTDATA) && $(NPM) ci --no-audit --no-fund

mcp-deps: $(MCP_TESTDATA)/node_modules/.package-lock.json

fuzz:
	@set -e; n=$(words $(FUZZ_TARGETS)); each="$(FUZZTIME)"; \
	if [ -z "$$each" ]; then each="$$(( $(FUZZBUDGET) / n ))s"; fi; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $$each"; \
		GO="$(GO)" .ci/fuzz $$pkg $$name $$each $(FUZZMINIMIZETIME); \
	done

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -cpu 1 ./bench/

clean:
	rm -f lookout

# The explorer UI (web/, Vite + Preact + TypeScript). `make web` installs the
# locked packages and builds web/dist, which is committed and embedded in the
# binary; web-check fails when the committed build is stale; web-test runs the
# Vitest unit tests and the end-to-end tests in headless Chromium against a
# real `lookout serve`; bench-web measures paint times (web/bench).
.PHONY: web web-test web-check bench-web

# package.json pins rollup (overrides) to a release whose 26 optional
# platform packages the registry mirror all serves: npm 11's `npm ci` wants
# every one of them in the lock file and fails otherwise.
web/node_modules/.package-lock.json: web/package.json web/package-lock.json
	cd web && $(NPM) ci --no-audit --no-fund

web: web/node_modules/.package-lock.json
	cd web && $(NPM) run build

web-test: web/node_modules/.package-lock.json
	cd web && $(NPM) test
	cd web && $(NPM) run e2e

web-check: web
	@git diff --exit-code --stat -- web/dist && test -z "$$(git status --porcelain -- web/dist)" || \
		{ echo "web/dist is stale: run make web and commit web/dist"; git status --short -- web/dist; exit 1; }

bench-web: web/node_modules/.package-lock.json
	cd web && node bench/paint.mjs

# The official LLM SDKs (openai, @anthropic-ai/sdk, @google/genai) whose
# agent scripts the gateway's tests run with node against fake providers and
# a real lookout serve (internal/server/testdata/sdk, locked versions).
SDK_DIR := internal/server/testdata/sdk

$(SDK_DIR)/node_modules/.package-lock.json: $(SDK_DIR)/package.json $(SDK_DIR)/package-lock.json
	cd $(SDK_DIR) && $(NPM) ci --no-audit --no-fund

sdk-deps: $(SDK_DIR)/node_modules/.package-lock.json
