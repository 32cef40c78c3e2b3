module github.com/goredlock/goredlock/keyserver/goredis

go 1.22.0

require (
	github.com/goredlock/goredlock v0.1.0
	github.com/redis/go-redis/v9 v9.18.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
)

replace github.com/goredlock/goredlock => ../..
