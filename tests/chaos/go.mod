module github.com/goredlock/goredlock/tests/chaos

go 1.22.0

require (
	github.com/gomodule/redigo v1.9.3
	github.com/goredlock/goredlock v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
)

replace github.com/goredlock/goredlock => ../..
