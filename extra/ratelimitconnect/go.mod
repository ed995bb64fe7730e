module github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/ratelimitgen/ratelimitgen v0.0.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c
	google.golang.org/protobuf v1.36.12
)

// The adapter builds against this checkout of the repository.
replace github.com/ratelimitgen/ratelimitgen => ../..
