# goredlock developer commands. `make test` is what CI runs.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
PKGS        := ./...

# Nested modules: their own go.mod, so the core module's users never
# download go-redis, rueidis, valkey-go, OpenTelemetry, gocron, SQL drivers,
# miniredis or the peers of the comparison.
NESTED      := keyserver/goredis keyserver/rueidis keyserver/valkey bench redlockotel integration/gocronlock integration/miniredis fence/sqlfence tests/chaos

.PHONY: test test-engines lint vet demo bench bench-peers chaos fuzz redis-up redis-down release-check

## test: vet, then every test with the race detector, in this module and in
## the nested modules (the short fault-injection run of tests/chaos
## included), then test-engines. Real redis-server processes (redis-server
## from PATH: Debian's Redis 7.0 in CI) are started by the tests that need
## them.
test: vet
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	@for m in $(NESTED); do echo "== $$m"; (cd $$m && $(GO) test -race -count=1 -timeout 15m ./...) || exit 1; done
	@$(MAKE) --no-print-directory test-engines

## test-engines: the Redis suites once per engine of ENGINES, with
## GOREDLOCK_REDIS_SERVER (internal/redistest) set to that engine's server
## binary: ./keyserver/redis/... (the shared transport suite,
## keyserver/redis/transporttest, runs from there) and redlock's TestRedis*
## tests. The engines are built from the source archives in
## ../shared/servers/ by its build.sh (about a minute each the first time,
## a second once built; gcc, make and libssl-dev, which .ci/run installs).
## Debian's Redis 7.0 (redis-server on PATH) is the engine of the rest of
## make test, which runs these suites on it; miniredis has its own module
## (integration/miniredis, in NESTED). Without the race detector, which
## the rest of make test runs on the same code over Redis 7.0: these
## suites check what an engine does, and under -race their timed waits
## failed more often on loaded cores (192 s against 218 s for Valkey 8.0.1;
## ENGINE_TESTFLAGS="-race -count=1" restores it). Under CI
## (CI set) a missing build.sh, a failed build or an engine of ENGINES
## that it did not build fails; outside CI the first two skip with a
## note. E.g. make test-engines ENGINES=valkey-8.0.1.
ENGINES          ?= redis-7.4.1 valkey-8.0.1
ENGINES_BUILD    ?= ../shared/servers/build.sh
ENGINE_TESTFLAGS ?= -count=1 -timeout 15m
test-engines:
	@if [ ! -x "$(ENGINES_BUILD)" ]; then \
	  if [ -n "$$CI" ]; then echo "test-engines: FAIL: $(ENGINES_BUILD) not found (the engines' source archives, issue 44)"; exit 1; fi; \
	  echo "test-engines: skipped: $(ENGINES_BUILD) not found"; exit 0; \
	fi; \
	if ! built=$$($(ENGINES_BUILD)); then \
	  if [ -n "$$CI" ]; then echo "test-engines: FAIL: $(ENGINES_BUILD) failed"; exit 1; fi; \
	  echo "test-engines: skipped: $(ENGINES_BUILD) failed (it needs gcc, make and libssl-dev)"; exit 0; \
	fi; \
	bin_of() { printf '%s\n' "$$built" | awk -v e="$$1" '$$1 == e { print $$2 }'; }; \
	for e in $(ENGINES); do \
	  bin=$$(bin_of $$e); \
	  if [ -z "$$bin" ] || [ ! -x "$$bin" ]; then echo "test-engines: FAIL: $(ENGINES_BUILD) built no $$e"; exit 1; fi; \
	done; \
	for e in $(ENGINES); do \
	  bin=$$(bin_of $$e); \
	  echo "== $$e: $$bin ($$($$bin --version))"; \
	  t0=$$(date +%s); \
	  GOREDLOCK_REDIS_SERVER=$$bin $(GO) test $(ENGINE_TESTFLAGS) ./keyserver/redis/... || exit 1; \
	  GOREDLOCK_REDIS_SERVER=$$bin $(GO) test $(ENGINE_TESTFLAGS) -run '^TestRedis' ./redlock || exit 1; \
	  echo "== $$e: passed in $$(($$(date +%s) - t0))s"; \
	done

## vet: go vet, here and in the nested modules.
vet:
	$(GO) vet $(PKGS)
	@for m in $(NESTED); do (cd $$m && $(GO) vet ./...) || exit 1; done

## lint: gofmt, go vet and staticcheck must all be clean, go mod tidy
## must leave every go.mod as it is, and git must track no built binary
## and no file over 1 MB (.ci/tracked).
lint: vet
	./.ci/tracked
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) mod tidy -diff
	@for m in $(NESTED); do echo "== $$m"; (cd $$m && $(GO) run $(STATICCHECK) ./... && $(GO) mod tidy -diff) || exit 1; done

## release-check: VERSION=vX.Y.Z (required): every nested module's
## requires set to VERSION and this repository's replaces dropped, in a
## temporary copy of the tree; the core and every published nested module
## served at VERSION by a local file-system module proxy; the core builds
## and vets, each nested module builds and passes go test -count=1 ./...
## against it, and a module outside the repository go gets
## keyserver/goredis@VERSION and builds; prints the tags to push.
## RELEASING.md has the procedure; CI runs it for the next version
## (.ci/release/next-version). Nested modules that are not tagged:
RELEASE_UNPUBLISHED := bench integration/miniredis tests/chaos
release-check:
	@test -n "$(VERSION)" || { echo "usage: make release-check VERSION=vX.Y.Z (RELEASING.md)"; exit 2; }
	GO='$(GO)' NESTED='$(NESTED)' UNPUBLISHED='$(RELEASE_UNPUBLISHED)' ./.ci/release/check '$(VERSION)'

## demo: the quickstart: workers competing for locks on in-memory servers.
demo:
	$(GO) run ./examples/quickstart

## bench: the benchmarks of this module.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## bench-peers: goredlock side by side with redsync, rueidislock,
## bsm/redislock (one node) and a raw SET NX fan-out, on redis-server
## processes it starts itself; prints markdown tables of medians. Lives in
## bench/, a module of its own. E.g. BENCH_PEERS_FLAGS=-nodes=1 or -quick.
BENCH_PEERS_FLAGS ?=
bench-peers:
	cd bench && $(GO) run . $(BENCH_PEERS_FLAGS)

## chaos: the fault-injection suite (tests/chaos, a module of its own) on
## five throwaway Redis nodes: every scenario at full length, about seven
## minutes, and its table.
## SHORT=1 runs the short version that make test also runs; LONG=1 runs
## every scenario for longer, for more than 100,000 grants in the safe
## ones (about 40 minutes; not run by CI); SEED=n replays a run's
## fault schedule.
chaos:
	cd tests/chaos && $(GO) test -count=1 -timeout $(if $(LONG),90m,20m) -run '^TestChaos$$' -v . -args \
	  $(if $(LONG),-chaos.long,$(if $(SHORT),,-chaos.full)) $(if $(SEED),-chaos.seed=$(SEED))

## fuzz: each fuzz target for FUZZTIME (default 1m): FromURL's parser and
## the pipelined connection's reply reader (keyserver/redis), the token
## format's rules (keyserver), and the command's flags and REDLOCK_SERVERS
## (cmd/redlock). make test
## runs their seeds; a finding is written under the package's
## testdata/fuzz, to commit with its fix.
FUZZTIME ?= 1m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzFromURL$$' -fuzztime $(FUZZTIME) ./keyserver/redis
	$(GO) test -run '^$$' -fuzz '^FuzzPipelineReplies$$' -fuzztime $(FUZZTIME) ./keyserver/redis/internal/redigotransport
	$(GO) test -run '^$$' -fuzz '^FuzzRanks$$' -fuzztime $(FUZZTIME) ./internal/layout
	$(GO) test -run '^$$' -fuzz '^FuzzArgs$$' -fuzztime $(FUZZTIME) ./cmd/redlock

## redis-up: throwaway Redis masters on 127.0.0.1, one per port of
## REDIS_PORTS (default 7001-7005), for examples/multiredis, which reads the
## same REDIS_PORTS from the environment; no persistence, files in
## $(REDIS_DIR). Each gets the marker of a store an hour old (docs/redis.md,
## "How the quarantine reads a server"), as a deployment may at
## provisioning, before any client: nothing can be held on it yet. Each server must answer with its own process id within
## five seconds, or redis-up fails naming the port: a port already taken
## makes the daemon die after it has forked.
REDIS_DIR   ?= $(or $(TMPDIR),/tmp)/goredlock-redis
REDIS_PORTS ?= 7001 7002 7003 7004 7005
redis-up:
	@command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { echo "redis-up: redis-server or redis-cli not found: apt-get install redis-server"; exit 1; }
	@for p in $(REDIS_PORTS); do \
	  d=$(REDIS_DIR)/$$p; \
	  if [ "$$(timeout 1 redis-cli -p $$p ping 2>/dev/null)" = PONG ]; then \
	    echo "redis-up: a Redis already answers on 127.0.0.1:$$p (make redis-down stops what redis-up started)"; exit 1; \
	  fi; \
	  mkdir -p $$d && rm -f $$d/redis.pid $$d/redis.log && \
	  redis-server --port $$p --bind 127.0.0.1 --dir $$d --save "" --appendonly no \
	    --daemonize yes --pidfile $$d/redis.pid --logfile $$d/redis.log || exit 1; \
	  up=; pid=; \
	  for i in $$(seq 50); do \
	    pid=$$(cat $$d/redis.pid 2>/dev/null); \
	    if [ -n "$$pid" ] && ! kill -0 $$pid 2>/dev/null; then break; fi; \
	    if [ -n "$$pid" ] && timeout 2 redis-cli -p $$p info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$$pid"; then up=1; break; fi; \
	    if grep -q "aborting" $$d/redis.log 2>/dev/null; then break; fi; \
	    sleep 0.1; \
	  done; \
	  if [ -z "$$up" ]; then \
	    [ -n "$$pid" ] && kill $$pid 2>/dev/null; rm -f $$d/redis.pid; \
	    echo "redis-up: redis-server did not start on 127.0.0.1:$$p; the end of $$d/redis.log:"; \
	    tail -n 3 $$d/redis.log 2>/dev/null | sed 's/^/  /'; \
	    exit 1; \
	  fi; \
	  redis-cli -p $$p SET goredlock:incarnation "redis-up-$$p" NX PX 999996400000 >/dev/null; \
	  echo "redis on 127.0.0.1:$$p"; \
	done

## redis-down: stop what redis-up started (the same REDIS_PORTS), and wait
## until each server has let go of its port.
redis-down:
	@for p in $(REDIS_PORTS); do \
	  f=$(REDIS_DIR)/$$p/redis.pid; [ -f $$f ] || continue; \
	  pid=$$(cat $$f); rm -f $$f; \
	  if [ -r /proc/$$pid/comm ] && ! grep -q redis /proc/$$pid/comm; then continue; fi; \
	  kill $$pid 2>/dev/null || continue; \
	  for i in $$(seq 50); do \
	    kill -0 $$pid 2>/dev/null && timeout 1 redis-cli -p $$p ping >/dev/null 2>&1 || break; \
	    sleep 0.1; \
	  done; \
	  echo "stopped 127.0.0.1:$$p"; \
	done
