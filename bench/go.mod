module github.com/goredlock/goredlock/bench

go 1.25.0

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.15.0
	github.com/gomodule/redigo v1.9.3
	github.com/goredlock/goredlock v0.1.0
	github.com/goredlock/goredlock/keyserver/goredis v0.1.0
	github.com/goredlock/goredlock/keyserver/rueidis v0.1.0
	github.com/goredlock/goredlock/keyserver/valkey v0.1.0
	github.com/redis/go-redis/v9 v9.18.0
	github.com/redis/rueidis v1.0.69
	github.com/valkey-io/valkey-go v1.0.79
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/goredlock/goredlock => ../

replace github.com/goredlock/goredlock/keyserver/goredis => ../keyserver/goredis

replace github.com/goredlock/goredlock/keyserver/rueidis => ../keyserver/rueidis

replace github.com/goredlock/goredlock/keyserver/valkey => ../keyserver/valkey
