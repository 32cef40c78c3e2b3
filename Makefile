# goredlock developer commands. `make test` is what CI runs.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
PKGS        := ./...

.PHONY: test lint vet demo bench redis-up redis-down

## test: vet, then every test with the race detector (real redis-server
## processes are started by the tests that need them).
test: vet
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

## vet: go vet.
vet:
	$(GO) vet $(PKGS)

## lint: gofmt, go vet and staticcheck must all be clean.
lint: vet
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	$(GO) run $(STATICCHECK) $(PKGS)

## demo: the quickstart: workers competing for locks on in-memory servers.
demo:
	$(GO) run ./examples/quickstart

## bench: the benchmarks of this module.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## redis-up: five throwaway Redis masters on 127.0.0.1:7001-7005 for
## examples/multiredis and examples/longjob; no persistence, files in $(REDIS_DIR).
REDIS_DIR   ?= $(or $(TMPDIR),/tmp)/goredlock-redis
REDIS_PORTS ?= 7001 7002 7003 7004 7005
redis-up:
	@command -v redis-server >/dev/null || { echo "redis-server not found: apt-get install redis-server"; exit 1; }
	@for p in $(REDIS_PORTS); do \
	  mkdir -p $(REDIS_DIR)/$$p && \
	  redis-server --port $$p --bind 127.0.0.1 --dir $(REDIS_DIR)/$$p --save "" --appendonly no \
	    --daemonize yes --pidfile $(REDIS_DIR)/$$p/redis.pid --logfile $(REDIS_DIR)/$$p/redis.log && \
	  echo "redis on 127.0.0.1:$$p"; \
	done

## redis-down: stop what redis-up started.
redis-down:
	@for p in $(REDIS_PORTS); do \
	  if [ -f $(REDIS_DIR)/$$p/redis.pid ]; then kill $$(cat $(REDIS_DIR)/$$p/redis.pid) 2>/dev/null; rm -f $(REDIS_DIR)/$$p/redis.pid; echo "stopped 127.0.0.1:$$p"; fi; \
	done
