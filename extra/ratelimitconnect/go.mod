module github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect

go 1.25.0

require (
	connectrpc.com/connect v1.20.0
	github.com/ratelimitgen/ratelimitgen v0.1.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/protobuf v1.36.12
)

// The adapter builds against this checkout of the repository.
replace github.com/ratelimitgen/ratelimitgen => ../..
