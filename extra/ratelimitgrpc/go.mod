module github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc

go 1.25.0

require (
	github.com/ratelimitgen/ratelimitgen v0.1.0
	github.com/stretchr/testify v1.12.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/dave/jennifer v1.7.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/mod v0.40.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/tools v0.49.0 // indirect
)

tool github.com/ratelimitgen/ratelimitgen/cmd/ratelimitgen

// The adapter builds against this checkout of the repository.
replace github.com/ratelimitgen/ratelimitgen => ../..
