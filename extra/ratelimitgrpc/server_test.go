package ratelimitgrpc_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// codeServer is the service behind the generated wrappers. An empty
// address is the caller's mistake and "broken@example.com" a failure of
// its own, so that tests see errors that are not rate-limit outcomes.
type codeServer struct {
	verifypb.UnimplementedVerifierServer
}

func (codeServer) SendCode(_ context.Context, req *verifypb.SendCodeRequest) (*verifypb.SendCodeResponse, error) {
	switch req.GetEmail() {
	case "":
		return nil, status.Error(codes.InvalidArgument, "email is required")
	case "broken@example.com":
		return nil, errors.New("mailer is down")
	}
	return &verifypb.SendCodeResponse{}, nil
}

func (codeServer) WatchCodes(req *verifypb.WatchCodesRequest, stream grpc.ServerStreamingServer[verifypb.CodeEvent]) error {
	return stream.Send(&verifypb.CodeEvent{Email: req.GetEmail()})
}

// rawErrors records the errors handlers return before the interceptors
// under test translate them, so that tests compare a status with the
// *runtime.LimitError it came from.
type rawErrors struct {
	mu   sync.Mutex
	errs []error
}

func (r *rawErrors) add(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// last returns the last error recorded.
func (r *rawErrors) last(t *testing.T) error {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.errs, "no handler returned an error")
	return r.errs[len(r.errs)-1]
}

func (r *rawErrors) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		r.add(err)
	}
	return resp, err
}

func (r *rawErrors) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	err := h(srv, ss)
	if err != nil {
		r.add(err)
	}
	return err
}

// startServer serves codeServer on a loopback port, wrapped by the
// generated wrapper of its server interface over lim, with the
// interceptors under test outermost, and returns a client of it, dialled
// with opts.
func startServer(t *testing.T, lim runtime.Limiter, opts ...grpc.DialOption) (verifypb.VerifierClient, *rawErrors) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	raw := new(rawErrors)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(ratelimitgrpc.UnaryServerInterceptor(), raw.unary),
		grpc.ChainStreamInterceptor(ratelimitgrpc.StreamServerInterceptor(), raw.stream),
	)
	verifypb.RegisterVerifierServer(srv, verifypb.NewRateLimitedVerifierServer(codeServer{}, lim))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		require.NoError(t, <-served)
	})
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	cc, err := grpc.NewClient(lis.Addr().String(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cc.Close()) })
	return verifypb.NewVerifierClient(cc), raw
}
