// Command verifyrpc serves the Verifier service of verify.proto, whose
// limits are declared on its rpcs with the (ratelimitgen.v1.limit) option:
// over Connect, gRPC and gRPC-Web with connect-go on -connect, and over
// gRPC with grpc-go on -grpc, both limited by one in-memory limiter, so
// that a count is shared whichever stack a call reaches.
//
// The code under gen/ is generated from proto/ by protoc, protoc-gen-go,
// protoc-gen-go-grpc, protoc-gen-connect-go and protoc-gen-ratelimit, at
// the versions this module's go.mod lists as tools; a test fails while it
// is stale. To regenerate it, from examples/verifyrpc:
//
//	go build -o /tmp/protoc-bin/ google.golang.org/protobuf/cmd/protoc-gen-go \
//		google.golang.org/grpc/cmd/protoc-gen-go-grpc \
//		connectrpc.com/connect/cmd/protoc-gen-connect-go \
//		github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto/cmd/protoc-gen-ratelimit
//	PATH=/tmp/protoc-bin:$PATH protoc -I proto -I third_party \
//		--go_out=gen --go_opt=paths=source_relative \
//		--go-grpc_out=gen --go-grpc_opt=paths=source_relative \
//		--connect-go_out=gen --connect-go_opt=paths=source_relative \
//		--ratelimit_out=gen --ratelimit_opt=paths=source_relative,grpc,connect \
//		verify/v1/verify.proto
//
// or, with those plugins in PATH, buf generate (buf.gen.yaml). Both read
// limit.proto from third_party, a link to extra/ratelimitproto/proto.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os/signal"
	"syscall"

	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

func main() {
	connectAddr := flag.String("connect", "localhost:8080", "address of the Connect server (HTTP/1.1 and HTTP/2 without TLS)")
	grpcAddr := flag.String("grpc", "localhost:9090", "address of the grpc-go server")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	limiter := memlimit.New()
	m := newMailer()
	mux := http.NewServeMux()
	mux.Handle(newConnectHandler(m, limiter))
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC clients speak HTTP/2
	httpSrv := &http.Server{Addr: *connectAddr, Handler: mux, Protocols: protocols}

	lis, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		log.Fatal(err)
	}
	grpcSrv := newGRPCServer(m, limiter)
	go func() {
		<-ctx.Done()
		grpcSrv.GracefulStop()
		_ = httpSrv.Shutdown(context.Background())
	}()
	go func() {
		if err := grpcSrv.Serve(lis); err != nil {
			log.Print(err)
		}
	}()
	log.Printf("Connect on http://%s, gRPC on %s", *connectAddr, *grpcAddr)
	if err := httpSrv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
