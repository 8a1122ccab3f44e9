# Everyday commands. Every Go module in go.work is built and tested from here.
SHELL := /bin/bash
GO ?= go
# VERSION holds this project's own release. The etcd levels are upstream's lines: each server
# binary is built at one and reports the upstream patch release that level implements
# (etcdx/pkg/buildinfo): bin/etcd at 3.7 (3.7.3), bin/etcd-last-release at 3.6 (3.6.16, the
# name upstream's tests use for the previous minor), bin/etcd-3.5 at 3.5 (3.5.35). The older levels'
# full sets (etcd, etcdctl, etcdutl) are also in bin/levels/3.6 and bin/levels/3.5, for an operator
# who runs one level throughout: their etcdctl reports that release and prints its tables.
RELEASE ?= $(shell cat VERSION)
NEWEST_LEVEL := 3.7
LEVEL ?= $(NEWEST_LEVEL)
LAST_RELEASE_LEVEL ?= 3.6
OLDEST_LEVEL ?= 3.5
GIT_SHA := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# stamp LEVEL: the link flags of a binary built at LEVEL.
stamp = -X etcdx/pkg/buildinfo.Level=$(1) -X etcdx/pkg/buildinfo.Release=$(RELEASE) -X etcdx/pkg/buildinfo.GitSHA=$(GIT_SHA)
LDFLAGS := $(call stamp,$(LEVEL))
MODULES := pkg server etcdctl etcdutl discovery upgradelab e2e
BIN := $(CURDIR)/bin
RUN_DIR := $(CURDIR)/.run

.PHONY: conformance robustness kube-shape soak build build-failpoints test tools unit fuzz e2e lint vulncheck run bench bench-micro sim lab clean etcdctl-docs nix-hash nix-check

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/etcd ./server
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/etcdutl ./etcdutl
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/etcdctl ./etcdctl
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/discovery ./discovery/cmd/discovery
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/upgradelab ./upgradelab/cmd/upgradelab
	@set -e; for l in $(LAST_RELEASE_LEVEL) $(OLDEST_LEVEL); do mkdir -p $(BIN)/levels/$$l; for c in server etcdctl etcdutl; do \
		n=$$c; [ $$c = server ] && n=etcd; \
		echo "CGO_ENABLED=0 $(GO) build (level $$l) -o $(BIN)/levels/$$l/$$n ./$$c"; \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(call stamp,$$l)" -o $(BIN)/levels/$$l/$$n ./$$c; done; done
	cp $(BIN)/levels/$(LAST_RELEASE_LEVEL)/etcd $(BIN)/etcd-last-release
	cp $(BIN)/levels/$(OLDEST_LEVEL)/etcd $(BIN)/etcd-$(OLDEST_LEVEL)
	@echo "built $(BIN)/etcd (level $(LEVEL)), etcd-last-release ($(LAST_RELEASE_LEVEL)), etcd-$(OLDEST_LEVEL) and levels/ at $(GIT_SHA), release $(RELEASE)"

# The server with upstream's gofail failpoints compiled in (build tag failpoints; release builds
# have none, at no cost): bin/failpoints/etcd at LEVEL and etcd-last-release at
# LAST_RELEASE_LEVEL. GOFAIL_HTTP=host:port serves them, GOFAIL_FAILPOINTS sets them at start
# (docs/operations.md lists each point).
build-failpoints:
	@mkdir -p $(BIN)/failpoints
	CGO_ENABLED=0 $(GO) build -trimpath -tags failpoints -ldflags "$(LDFLAGS)" -o $(BIN)/failpoints/etcd ./server
	CGO_ENABLED=0 $(GO) build -trimpath -tags failpoints -ldflags "$(call stamp,$(LAST_RELEASE_LEVEL))" -o $(BIN)/failpoints/etcd-last-release ./server
	CGO_ENABLED=0 $(GO) build -trimpath -tags failpoints -ldflags "$(call stamp,3.5)" -o $(BIN)/failpoints/etcd-3.5 ./server

# The whole suite: unit tests with the race detector, every fuzz target for a bounded time,
# end-to-end tests on the real binaries built above, and the flake verified offline. It installs
# what it needs first (tools). Each phase's time is printed (scripts/test-phases.sh) and the
# slowest end-to-end tests are listed after the e2e phase: make test must stay under 30 minutes.
test:
	@MAKE="$(MAKE)" ./scripts/test-phases.sh tools lint vulncheck build unit fuzz e2e nix-check

# zsh (the etcdctl completion test) and nix (nix-check), from Debian's packages when missing.
tools:
	@./scripts/ensure-tools.sh

unit:
	@set -e; for m in $(filter-out e2e,$(MODULES)); do \
		echo "== go test -race $$m"; (cd $$m && CGO_ENABLED=1 $(GO) test -race -count=1 ./...); done
	@echo "== the simulation with failpoints built in (its delays take effect): one seed"
	cd server && SIM_SEED=3 $(GO) test -tags failpoints -count=1 -run '^TestSimulation$$' ./sim

# Each fuzz target for a bounded number of runs from the committed seed corpora (scripts/fuzz.sh).
fuzz:
	./scripts/fuzz.sh

# gotestsum (scripts/go-tools.sh) prints each test as it ends with its time, every failed test's
# output again at the end, then the tests that took longer than a minute (.run/e2e.json has all).
# E2E_FLAGS adds go test flags, e.g. E2E_FLAGS='-run TestSnapshotRestore'.
E2E_FLAGS ?=
e2e: build build-failpoints
	@mkdir -p $(RUN_DIR)
	@tools=$$(./scripts/go-tools.sh); cd e2e && rc=0; \
		E2E_BIN_DIR=$(BIN) $$tools/gotestsum --format testname --format-icons text --jsonfile $(RUN_DIR)/e2e.json -- \
			-count=1 -timeout 30m -parallel 4 $(E2E_FLAGS) ./... || rc=$$?; \
		echo "== e2e tests that took over a minute:"; $$tools/gotestsum tool slowest --jsonfile $(RUN_DIR)/e2e.json --threshold 60s; \
		exit $$rc

# gofmt, go vet and staticcheck (all its default checks; also on the failpoint build's files).
lint:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done
	@set -e; tools=$$(./scripts/go-tools.sh); for m in $(MODULES); do (cd $$m && $$tools/staticcheck ./...); done; \
		(cd server && $$tools/staticcheck -tags failpoints ./...)
	@echo "lint ok"

# govulncheck on every module against the pinned vulnerability database (scripts/go-tools.sh):
# fails when our code reaches a vulnerable function of a required module; the standard
# library's are listed as the toolchain's, with the Go release that fixes them.
vulncheck:
	@tools=$$(./scripts/go-tools.sh); $(GO) run ./e2e/cmd/vulncheck -govulncheck $$tools/govulncheck -db $$tools/vulndb $(MODULES)

# A long campaign of the in-process simulation: SEEDS seeded runs from FIRST_SEED, each a cluster
# under client load and its seed's faults; every failing seed is printed with the command that
# replays it (scripts/sim.sh). By default the stepped simulation (server/sim/stepped), where a
# seed replays byte for byte. WHOLE=1: the whole-member simulation (server/sim, each member the
# real etcdserver), in PARALLEL processes, built with failpoints so its "delay" steps take
# effect; VIRTUAL=1 with it: each seed in virtual time (testing/synctest). make test runs two
# whole-member seeds with the unit tests, a third with failpoints, and 50 stepped seeds.
SEEDS ?= 100
FIRST_SEED ?= 1
PARALLEL ?= 1
VIRTUAL ?=
WHOLE ?=
sim:
	SEEDS=$(SEEDS) FIRST_SEED=$(FIRST_SEED) PARALLEL=$(PARALLEL) VIRTUAL=$(VIRTUAL) WHOLE=$(WHOLE) GO=$(GO) ./scripts/sim.sh

# The hot paths' micro-benchmarks (mvcc put, range, watch fan-out; WAL save; backend commit): a
# change's effect in seconds, before make bench.
bench-micro:
	cd server && $(GO) test -run '^$$' -bench . -benchmem ./mvcc ./wal ./backend

# Upstream's own e2e tests at the release LEVEL implements (3.7, 3.6, 3.5), every one, against our
# binaries at that level and against upstream's release, on this machine in one run; writes
# docs/conformance/e2e-LEVEL.json and docs/conformance.md (e2e/conformance). The binaries are
# built at their own levels whatever LEVEL says. CONFORMANCE_FLAGS adds flags, e.g.
# CONFORMANCE_FLAGS='--run TestCtlV3Put' (a partial run is printed, not recorded), or
# CONFORMANCE_FLAGS=--rerun-differences (ours only, the tests the record shows differing; recorded, with a note).
CONFORMANCE_FLAGS ?=
conformance:
	$(MAKE) build build-failpoints LEVEL=$(NEWEST_LEVEL)
	cd e2e && $(GO) run ./cmd/conformance --level $(LEVEL) --bin $(BIN) --records $(CURDIR)/docs/conformance \
		--doc $(CURDIR)/docs/conformance.md --work $(RUN_DIR)/conformance $(CONFORMANCE_FLAGS)

# Upstream's robustness suite (go.etcd.io/etcd/tests/v3/robustness) at the newest level's release:
# its exploratory scenarios ROBUSTNESS_COUNT times (each run draws its failpoints afresh) and every
# regression scenario, on bin/failpoints and on upstream's failpoint build, one process at a time
# (the traffic needs its minimal rate); records docs/conformance/robustness-3.7.json and
# regenerates docs/conformance.md. About an hour on 2 CPUs.
ROBUSTNESS_COUNT ?= 3
robustness:
	$(MAKE) build build-failpoints LEVEL=$(NEWEST_LEVEL)
	cd e2e && $(GO) run ./cmd/conformance --suite robustness --level $(NEWEST_LEVEL) --count $(ROBUSTNESS_COUNT) \
		--parallel 1 --timeout 45m --bin $(BIN) --records $(CURDIR)/docs/conformance \
		--doc $(CURDIR)/docs/conformance.md --work $(RUN_DIR)/robustness $(ROBUSTNESS_FLAGS)

# A local 3-member cluster (one process each, logs in .run/logs); stop it with Ctrl-C.
run: build
	BIN=$(BIN) RUN_DIR=$(RUN_DIR) ./scripts/run-local-cluster.sh

# Our server and upstream etcd side by side; writes docs/performance.md (bin/etcd against
# upstream's current release, about 40 minutes) and docs/performance-$(LAST_RELEASE_LEVEL).md (our
# build at the last release's level against that line's current release, fewer throughput
# rounds, about 30 minutes).
bench: build
	cd e2e && $(GO) run ./cmd/bench --ours $(BIN)/etcd --out $(CURDIR)/docs/performance.md
	cd e2e && $(GO) run ./cmd/bench --ours $(BIN)/levels/$(LAST_RELEASE_LEVEL)/etcd --upstream-version $(LAST_RELEASE_LEVEL) --throughput-rounds 3 --out $(CURDIR)/docs/performance-$(LAST_RELEASE_LEVEL).md

# A soak: the Kubernetes-shaped load at a fixed N for HOURS on three members of ours and three of
# upstream's at once, defrag every 20 minutes; writes docs/soak.md (each series' slope over the
# last half hour, ours beside upstream's), docs/soak.png and docs/soak.json (every sample: `go run
# ./cmd/soak --report-from ../docs/soak.json` in e2e/ writes the report again without a run).
# SOAK_FLAGS adds flags (--nodes ...).
HOURS ?= 1
SOAK_FLAGS ?=
soak: build
	cd e2e && $(GO) run ./cmd/soak --ours $(BIN)/etcd --hours $(HOURS) --out $(CURDIR)/docs/soak.md --plot $(CURDIR)/docs/soak.png \
		--samples $(CURDIR)/docs/soak.json $(SOAK_FLAGS)

# docs/kube-shape.md and .json: what a real kube-apiserver (built from the Go module proxy) sends to
# an upstream etcd member while a simulated fleet of nodes drives it; the bench's Kubernetes-shaped
# workload takes its defaults from it. About 10 minutes, plus kube-apiserver's first build.
KUBE_SHAPE_FLAGS ?=
kube-shape:
	cd e2e && $(GO) run ./cmd/kubeshape --out $(CURDIR)/docs/kube-shape.md --json $(CURDIR)/docs/kube-shape.json $(KUBE_SHAPE_FLAGS)

# docs/etcdctl.md: one real example per etcdctl command, run against a local 3-member cluster.
etcdctl-docs: build
	BIN=$(BIN) ./scripts/etcdctl-examples.sh > docs/etcdctl.md.tmp && mv docs/etcdctl.md.tmp docs/etcdctl.md

# The upgrade lab's default plan (a rolling upgrade 3.6 -> 3.7 under the workload), in
# containers where a Docker engine answers, else as local processes.
lab: build
	$(BIN)/upgradelab run --plan upgrade --bin-dir $(BIN) $(LAB_FLAGS)

# nix/vendor-hash: the hash nixpkgs computes for the workspace's `go work vendor` tree, which
# flake.nix builds from. Run it after any dependency change (a test fails until you do).
nix-hash:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		GOFLAGS= $(GO) work vendor -o "$$tmp/vendor" && \
		NIX_CONFIG="experimental-features = nix-command" nix hash path "$$tmp/vendor" > nix/vendor-hash && \
		echo "nix/vendor-hash: $$(cat nix/vendor-hash)"

# The flake, verified offline against the stand-in for nixpkgs in nix/ (see docs/building.md).
nix-check:
	./scripts/nix-check.sh

clean:
	rm -rf $(BIN) $(RUN_DIR)
