module github.com/goredlock/goredlock/integration/miniredis

go 1.22.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/goredlock/goredlock v0.1.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/goredlock/goredlock => ../..
