module github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto

go 1.25.0

// The plugin builds against this checkout of the repository.
replace github.com/ratelimitgen/ratelimitgen => ../..

require (
	github.com/ratelimitgen/ratelimitgen v0.1.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
