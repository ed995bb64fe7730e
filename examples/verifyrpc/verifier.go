package main

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	verifyv1 "github.com/ratelimitgen/ratelimitgen/examples/verifyrpc/gen/verify/v1"
	"github.com/ratelimitgen/ratelimitgen/examples/verifyrpc/gen/verify/v1/verifyv1connect"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// rightCode is the only code VerifyCode accepts, here.
const rightCode = "123456"

// mailer is the service's work, sending codes by e-mail; here it counts
// them, so that a test sees which calls got through.
type mailer struct {
	mu   sync.Mutex
	sent map[string]int
}

func newMailer() *mailer { return &mailer{sent: map[string]int{}} }

func (m *mailer) send(email string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent[email]++
}

func (m *mailer) count(email string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent[email]
}

// newConnectHandler returns the path and the handler of the Verifier
// service for connect-go, each rpc limited as verify.proto declares it.
// The interceptor answers a denial with resource_exhausted and the wait.
func newConnectHandler(m *mailer, limiter runtime.Limiter) (string, http.Handler) {
	return verifyv1connect.NewVerifierHandler(
		verifyv1connect.NewRateLimitedVerifierHandler(connectVerifier{m}, limiter),
		connect.WithInterceptors(ratelimitconnect.NewInterceptor()),
	)
}

// newGRPCServer returns a grpc-go server of the Verifier service, each
// rpc limited by the same declarations. The interceptors answer a denial
// with RESOURCE_EXHAUSTED and a RetryInfo.
func newGRPCServer(m *mailer, limiter runtime.Limiter) *grpc.Server {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(ratelimitgrpc.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(ratelimitgrpc.StreamServerInterceptor()),
	)
	verifyv1.RegisterVerifierServer(srv, verifyv1.NewRateLimitedVerifierServer(grpcVerifier{m: m}, limiter))
	return srv
}

// connectVerifier implements verifyv1connect.VerifierHandler, knowing
// nothing of limits.
type connectVerifier struct{ m *mailer }

func (v connectVerifier) SendCode(_ context.Context, req *connect.Request[verifyv1.SendCodeRequest]) (*connect.Response[verifyv1.SendCodeResponse], error) {
	v.m.send(req.Msg.GetEmail())
	return connect.NewResponse(&verifyv1.SendCodeResponse{}), nil
}

func (v connectVerifier) WatchCodes(_ context.Context, req *connect.Request[verifyv1.WatchCodesRequest], stream *connect.ServerStream[verifyv1.CodeEvent]) error {
	return stream.Send(&verifyv1.CodeEvent{Email: req.Msg.GetEmail()})
}

func (v connectVerifier) VerifyCode(_ context.Context, req *connect.Request[verifyv1.VerifyCodeRequest]) (*connect.Response[verifyv1.VerifyCodeResponse], error) {
	if req.Msg.GetCode() != rightCode {
		return nil, connect.NewError(connect.CodePermissionDenied, errors.New("wrong code"))
	}
	return connect.NewResponse(&verifyv1.VerifyCodeResponse{}), nil
}

// grpcVerifier implements verifyv1.VerifierServer, knowing nothing of
// limits.
type grpcVerifier struct {
	verifyv1.UnimplementedVerifierServer
	m *mailer
}

func (v grpcVerifier) SendCode(_ context.Context, req *verifyv1.SendCodeRequest) (*verifyv1.SendCodeResponse, error) {
	v.m.send(req.GetEmail())
	return &verifyv1.SendCodeResponse{}, nil
}

func (v grpcVerifier) WatchCodes(req *verifyv1.WatchCodesRequest, stream grpc.ServerStreamingServer[verifyv1.CodeEvent]) error {
	return stream.Send(&verifyv1.CodeEvent{Email: req.GetEmail()})
}

func (v grpcVerifier) VerifyCode(_ context.Context, req *verifyv1.VerifyCodeRequest) (*verifyv1.VerifyCodeResponse, error) {
	if req.GetCode() != rightCode {
		return nil, status.Error(codes.PermissionDenied, "wrong code")
	}
	return &verifyv1.VerifyCodeResponse{}, nil
}
