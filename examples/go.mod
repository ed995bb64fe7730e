module github.com/ratelimitgen/ratelimitgen/examples

go 1.25.0

require (
	github.com/prometheus/client_golang v1.24.1
	github.com/ratelimitgen/ratelimitgen v0.1.0
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/fx v1.24.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.70.1 // indirect
	github.com/prometheus/procfs v0.21.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/dig v1.19.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.26.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/mod v0.40.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/tools v0.49.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

// The example builds against this checkout of the repository.
replace (
	github.com/ratelimitgen/ratelimitgen => ../
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom => ../extra/ratelimitprom
)

tool github.com/ratelimitgen/ratelimitgen/cmd/ratelimitgen
