module github.com/goredlock/goredlock

go 1.22

require (
	github.com/gomodule/redigo v1.9.3
	github.com/hashicorp/go-multierror v1.1.1
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
