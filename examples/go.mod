module github.com/ratelimitgen/ratelimitgen/examples

go 1.25.0

require (
	github.com/ratelimitgen/ratelimitgen v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.22.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dave/jennifer v1.7.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/mod v0.40.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/tools v0.49.0 // indirect
)

replace github.com/ratelimitgen/ratelimitgen => ../

tool github.com/ratelimitgen/ratelimitgen/cmd/ratelimitgen
