package verifypb

import (
	"context"

	"google.golang.org/grpc"
)

// KeyedVerifierServer is VerifierServer with its parameters named, so that
// its directives can key a limit on the request: protoc-gen-go-grpc writes
// the server interface's parameters unnamed, and a directive in
// verify.proto can therefore limit only every caller together. Its method
// set is VerifierServer's, so any VerifierServer is a KeyedVerifierServer
// and a RateLimitedKeyedVerifierServer registers as a VerifierServer. Keep
// the signatures in step with verify_grpc.pb.go; the compiler checks it
// (see the assertion below).
type KeyedVerifierServer interface {
	// SendCode e-mails a fresh code to req.Email; the limit protects the
	// recipient's mailbox, whoever asks.
	//
	//ratelimit:key=req.GetEmail() window=1m max=3 name=Verifier.SendCode
	SendCode(ctx context.Context, req *SendCodeRequest) (*SendCodeResponse, error)

	// WatchCodes streams the codes sent to req.Email. A generated wrapper
	// decides a streaming call once, before its first message; it is
	// decided without the stream's context, which the wrapper cannot name.
	//
	//ratelimit:key=req.GetEmail() window=1m max=2 name=Verifier.WatchCodes
	WatchCodes(req *WatchCodesRequest, stream grpc.ServerStreamingServer[CodeEvent]) error

	mustEmbedUnimplementedVerifierServer()
}

// The two interfaces have one method set: a change to verify.proto that
// this file does not follow breaks the build here.
var (
	_ VerifierServer      = KeyedVerifierServer(nil)
	_ KeyedVerifierServer = VerifierServer(nil)
)
