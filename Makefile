# Hourglass. `make help` lists the targets.
GO ?= go
BIN := bin
# The image `make release` and `make image` build; the Helm chart's default
# image.repository is the same (deploy/release_test.go checks it).
IMAGE ?= ghcr.io/hourglass/hourglass
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## run the whole pipeline on an embedded broker with demo orders
	$(GO) run ./cmd/hourglass demo

.PHONY: serve
serve: ## like demo, then keep the pipeline running as a local broker (127.0.0.1:9092)
	$(GO) run ./cmd/hourglass demo --serve

.PHONY: test
test: ## run every test (installs what is missing first)
	scripts/test.sh

.PHONY: build
build: ## build router, canceller and hourglass into bin/
	$(GO) build -o $(BIN)/ ./cmd/...

.PHONY: examples
examples: build ## run the producers of examples/ (Go, Python with confluent-kafka and kafka-python, kcat) against demo --serve: each order closed on time, found by status; Java compiled
	examples/run.sh

.PHONY: lint
lint: ## gofmt and golangci-lint (.golangci.yml, pinned, installed into .tools) on every Go module; FIX=1 applies its fixes
	scripts/lint.sh $(if $(FIX),--fix)

.PHONY: report-png
report-png: ## the HTML report of fixed data rendered by headless Chromium to bin/report.png (and bin/report.html)
	@command -v chromium >/dev/null || { echo "report-png: no chromium on PATH; scripts/deps.sh installs it"; exit 1; }
	$(GO) test -count=1 -run '^TestHTMLScreenshot$$' -v ./internal/report/ -args -report-png=$(abspath $(BIN))/report.png

.PHONY: console-png
console-png: ## screenshots of the console's pages over a test pipeline, by headless Chromium, into docs/console/*.png (needs ClickHouse: scripts/deps.sh)
	@command -v chromium >/dev/null || { echo "console-png: no chromium on PATH; scripts/deps.sh installs it"; exit 1; }
	$(GO) test -count=1 -run '^TestConsole$$' ./internal/console/ -args -console-png=$(abspath docs/console)

.PHONY: fuzz
fuzz: ## fuzz the record header decoder for a minute
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./pkg/tiers

.PHONY: bench
bench: build ## pipeline benchmark: 200,000 mixed-delay orders at 10,000/s (ORDERS=, RATE=, DELAYS=)
	$(BIN)/hourglass bench --orders $(or $(ORDERS),200000) --rate $(or $(RATE),10000) --delays $(or $(DELAYS),mix)

.PHONY: bench-memory
bench-memory: build ## router RSS while pending deadlines grow from 10,000 to 1,000,000 (fails above 10 MB of growth)
	$(BIN)/hourglass bench --pending-steps 10000,100000,1000000 --rate 50000 --max-growth-mb 10

.PHONY: bench-cancellations
bench-cancellations: build ## router RSS while its store of cancellations grows from 10,000 to 1,000,000 (fails above 10 MB of growth)
	$(BIN)/hourglass bench --cancellation-steps 10000,1000000 --rate 50000 --max-growth-mb 10

.PHONY: bench-kill
bench-kill: build ## SIGKILL the router mid-run (PROCESS=canceller for the canceller), with and without an instance id
	$(BIN)/hourglass bench --orders 20000 --rate 2000 --kill $(or $(PROCESS),router) --instance-ids
	$(BIN)/hourglass bench --orders 20000 --rate 2000 --kill $(or $(PROCESS),router)

.PHONY: bench-hostile
bench-hostile: build ## near-limit records and zstd bombs next to 2,000 orders/s; fails if the router passes 400 MB
	$(BIN)/hourglass bench --orders 40000 --rate 2000 --hostile-rate 20 --bombs 10 --max-router-rss-mb 400

# The default ladder with a minute scaled to 10 ms (every tier divided by 6,000).
LADDER_SCALED := 10ms,20ms,50ms,100ms,300ms,600ms,1800ms,7200ms,14400ms,43200ms,100800ms,432000ms,1296000ms,3888000ms

.PHONY: bench-ladder
bench-ladder: build ## produces per deadline into the delay topics for 20,000 orders due DELAY (10s) ahead: the old ladder 1m,5m,30m, then the default, a minute scaled to 10 ms (fails above 22, its most up to a scaled year)
	$(BIN)/hourglass bench --orders 20000 --rate 1000 --delays $(or $(DELAY),10s) --tiers 10ms,50ms,300ms
	$(BIN)/hourglass bench --orders 20000 --rate 1000 --delays $(or $(DELAY),10s) --tiers $(LADDER_SCALED) --max-produces-per-deadline 22

.PHONY: bench-burst
bench-burst: build ## 1,000,000 deadlines due at one instant, log closer, about 40 s (N=, CLOSER=postgres or mysql to close them in a table: N=100000 takes 30 s)
	$(BIN)/hourglass bench --burst $(or $(N),1000000) --closer $(or $(CLOSER),log) --timeout 15m

.PHONY: bench-db
bench-db: build ## canceller closing 100,000 orders in the local Postgres at 10,000/s, all due 5 s after scheduling (ORDERS=, RATE=, DELAYS=, CLOSER=mysql)
	$(BIN)/hourglass bench --closer $(or $(CLOSER),postgres) --orders $(or $(ORDERS),100000) --rate $(or $(RATE),10000) --delays $(or $(DELAYS),5s) --timeout 10m

.PHONY: bench-ab
bench-ab: ## paired benchmark against BASE, alternating, with medians and ratios (BASE= required, PAIRS=3, ARGS="--orders 200000 --rate 50000 --delays mix")
	@test -n "$(BASE)" || { echo "usage: make bench-ab BASE=<commit> [PAIRS=3] [ARGS='bench flags']"; exit 2; }
	$(GO) run ./scripts/benchab --base $(BASE) --pairs $(or $(PAIRS),3) -- $(or $(ARGS),--orders 200000 --rate 50000 --delays mix)

.PHONY: bench-wake
bench-wake: ## CPU a Go process spends on this machine per wake-up with loopback round trips: the floor under CPU per deadline at low rates (JSON)
	$(GO) run ./scripts/wakecost

.PHONY: bench-closes
bench-closes: ## canceller closing 20,000 orders in Postgres with the sql closer, 50 in flight (JSON)
	$(GO) test -run '^$$' -bench CancellerPostgres -benchtime 4x ./internal/e2e

.PHONY: loadtest
loadtest: ## k6 load test on a local pipeline (20 s at 200/s, delays up to 10 s, 20% paid), judged by k6 thresholds on the outcomes, then verify (RATE=, DURATION=, SCRIPT=, BROKERS=)
	GO=$(GO) loadtest/run.sh

.PHONY: loadtest-test
loadtest-test: ## vet and test the load test module (k6 extension, manifest, verify, k6 thresholds on a healthy and a slowed router)
	cd loadtest && $(GO) vet ./... && $(GO) test -race -count=1 -shuffle=on ./...

.PHONY: k8s-tools
k8s-tools: ## install helm, kubeconform and the Kubernetes schemas into .tools (pinned)
	scripts/k8s-tools.sh

.PHONY: chart
chart: k8s-tools ## lint, render and validate the Helm chart and the Dockerfile; the schema generator's tests
	$(GO) test -count=1 -run 'Chart|Kubeconform|Docker' ./deploy/
	cd deploy/tools && $(GO) vet ./k8sschema && $(GO) test -count=1 ./k8sschema

.PHONY: kube-check
kube-check: ## the chart on a local kube-apiserver + etcd with kwok nodes: dry-run=server, install/upgrade/uninstall --wait (VALUES=ci/...)
	deploy/tools/kube/check.sh $(VALUES)

# The tag `make image` gives the image: a tag of your own (a commit, say)
# lets a cluster that already pulled one image pull the next.
TAG ?= dev

.PHONY: image
image: ## build the container image, tagged IMAGE:TAG (TAG=dev; needs a Docker engine)
	docker build -t $(IMAGE):$(TAG) .

.PHONY: release
release: ## release VERSION=vX.Y.Z into dist/: a tar.gz per platform (PLATFORMS=), SHA256SUMS, the chart; the image IMAGE:VERSION when docker is there (PUSH=1)
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=vX.Y.Z [PLATFORMS='linux/amd64 darwin/arm64'] [IMAGE=$(IMAGE)] [PUSH=1]"; exit 2; }
	GO=$(GO) VERSION=$(VERSION) PLATFORMS="$(PLATFORMS)" IMAGE=$(IMAGE) PUSH=$(PUSH) scripts/release.sh

.PHONY: ci
ci: ## what CI runs
	.ci/run

.PHONY: clean
clean: ## remove build output
	rm -rf $(BIN) dist
