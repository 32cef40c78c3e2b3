module github.com/goredlock/goredlock

go 1.22

require go.uber.org/goleak v1.3.0

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
