// Package verifypb is the test service of ratelimitgrpc, compiled from
// verify.proto: the generated code is committed, so building and testing
// need neither protoc nor its plugins. To regenerate it after changing
// verify.proto (protoc 3.21.12, protoc-gen-go v1.36.12 and
// protoc-gen-go-grpc v1.6.2 wrote the committed files):
//
//	apt-get install -y protobuf-compiler libprotobuf-dev
//	GOBIN=/tmp/protoc-bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	GOBIN=/tmp/protoc-bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
//	cd extra/ratelimitgrpc/internal/verifypb
//	PATH=/tmp/protoc-bin:$PATH protoc --go_out=. --go_opt=paths=source_relative \
//		--go-grpc_out=. --go-grpc_opt=paths=source_relative verify.proto
//
// then the rate-limited wrappers, whose directives are in verify.proto
// (a test fails while ratelimit_gen.go is stale):
//
//	go generate ./...
package verifypb

//go:generate go tool ratelimitgen
