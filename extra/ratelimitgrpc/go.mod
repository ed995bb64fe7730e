module github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc

go 1.25.0

replace github.com/ratelimitgen/ratelimitgen => ../..

require (
	github.com/ratelimitgen/ratelimitgen v0.0.0
	github.com/stretchr/testify v1.12.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)
