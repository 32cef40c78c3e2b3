module github.com/goredlock/goredlock/keyserver/rueidis

go 1.22.0

require (
	github.com/goredlock/goredlock v0.1.0
	github.com/redis/rueidis v1.0.55
	go.uber.org/goleak v1.3.0
)

require (
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	golang.org/x/sys v0.30.0 // indirect
)

replace github.com/goredlock/goredlock => ../..
