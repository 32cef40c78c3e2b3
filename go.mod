module github.com/goredlock/goredlock

go 1.22

require go.uber.org/goleak v1.3.0

require github.com/stretchr/testify v1.12.1 // indirect
