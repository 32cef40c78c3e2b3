# goredlock developer commands. `make test` is what CI runs.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
PKGS        := ./...

.PHONY: test lint vet demo bench

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
