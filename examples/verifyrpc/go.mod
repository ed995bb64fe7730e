module github.com/ratelimitgen/ratelimitgen/examples/verifyrpc

go 1.25.0

// The example builds against this checkout of the repository.
replace (
	github.com/ratelimitgen/ratelimitgen => ../..
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect => ../../extra/ratelimitconnect
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc => ../../extra/ratelimitgrpc
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto => ../../extra/ratelimitproto
)

tool (
	connectrpc.com/connect/cmd/protoc-gen-connect-go
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto/cmd/protoc-gen-ratelimit
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
)

require (
	connectrpc.com/connect v1.20.0
	github.com/ratelimitgen/ratelimitgen v0.1.0
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect v0.1.0
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc v0.1.0
	github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto v0.1.0
	github.com/stretchr/testify v1.12.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.2 // indirect
)
