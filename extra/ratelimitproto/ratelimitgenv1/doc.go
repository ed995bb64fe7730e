// Package ratelimitgenv1 holds the Go of ratelimitgen/v1/limit.proto, the
// (ratelimitgen.v1.limit) method option that protoc-gen-ratelimit reads.
// Code generated from a .proto that imports limit.proto imports this
// package, which registers the option.
//
// limit.pb.go was written by protoc 3.21.12 and protoc-gen-go v1.36.12,
// the google.golang.org/protobuf this module requires; a test fails while
// it is stale. From extra/ratelimitproto:
//
//	go build -o /tmp/protoc-bin/ google.golang.org/protobuf/cmd/protoc-gen-go
//	protoc -I proto --plugin=/tmp/protoc-bin/protoc-gen-go --go_out=. \
//		--go_opt=module=github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto \
//		ratelimitgen/v1/limit.proto
package ratelimitgenv1
