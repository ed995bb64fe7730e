package ratelimitgrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// KeyFunc returns the rate-limit key of an incoming call from its context,
// which holds its peer (google.golang.org/grpc/peer) and metadata. Its
// error is sent to the client as the message of an INVALID_ARGUMENT
// status, so it must not contain the key or anything else private.
type KeyFunc func(ctx context.Context) (string, error)

// ByPeer keys calls by the IP address of the client's connection, as
// ratelimithttp.ByClientIP keys HTTP requests, with the same options and
// byte for byte the same keys: IPv4 whole ("192.0.2.1", IPv4-mapped
// addresses too), IPv6 by its /64 ("2001:db8::/64") unless
// ratelimithttp.IPv6Prefix says otherwise. Behind a proxy every call has
// the proxy's address: ratelimithttp.TrustProxyHeader takes the client
// from a metadata entry such as x-forwarded-for on calls from the proxies
// it lists only. A peer that is not an IP connection (a Unix socket, an
// in-memory listener) is keyed by its address's string; a call without a
// peer is a key error.
func ByPeer(opts ...ratelimithttp.ClientIPOption) KeyFunc {
	key := ratelimithttp.ClientIPKey(opts...)
	return func(ctx context.Context) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return "", errors.New("the rate limit is per client address, and this call has none")
		}
		a, ok := p.Addr.(*net.TCPAddr)
		if !ok {
			return p.Addr.String(), nil
		}
		return key(a.String(), func(header string) []string {
			return metadata.ValueFromIncomingContext(ctx, strings.ToLower(header))
		})
	}
}

// ByMetadata keys calls by the first value of the incoming metadata entry
// name (case-insensitive, as all gRPC metadata keys), such as an API key
// or a tenant id. A call without it, or with an empty first value, is a
// key error.
func ByMetadata(name string) KeyFunc {
	name = strings.ToLower(name)
	return func(ctx context.Context) (string, error) {
		vs := metadata.ValueFromIncomingContext(ctx, name)
		if len(vs) == 0 || vs[0] == "" {
			return "", fmt.Errorf("metadata %q is required: this method's rate limit is per %s", name, name)
		}
		return vs[0], nil
	}
}

// MethodLimiter limits whole gRPC methods without generated code, one
// runtime.Limit per full method name, keyed by a KeyFunc; its Unary and
// Stream methods return the interceptors. Each call of a limited method is
// keyed and decided with cost 1 by runtime.Enforce (a limit in ModeShadow
// never denies, ModeOff is not asked), then:
//
//   - admitted: the handler is called, and every admitted call counts,
//     whatever the handler answers, unless CountCodes says which answers
//     count;
//   - denied: the status Status gives the *runtime.LimitError, with the
//     PushbackTrailer trailer, and the handler is not called;
//   - limiter error: UNAVAILABLE, whatever the error (no decision was made);
//   - key error: INVALID_ARGUMENT with the KeyFunc's error as its message,
//     and the call is neither counted nor served.
//
// A limit of runtime.Concurrency limits calls in flight: an admitted call
// holds a permit while its handler runs, in a context kept by runtime.Keep
// (cancelled with runtime.ErrPermitLost as the cause if the permit is
// lost), and releases it when the handler returns or panics, whatever
// CountCodes says; its denial carries no RetryInfo and no pushback (see
// Status). Such a limit needs a runtime.Holder.
//
// Calls of other methods go to the handler untouched. A streaming call is
// decided once, when it starts. Errors the handler returns are left as
// they are: chain UnaryServerInterceptor too for generated wrappers.
type MethodLimiter struct {
	lim    runtime.Limiter
	limits map[string]runtime.Limit
	key    KeyFunc
	// count, set by CountCodes, says which status codes count.
	count func(codes.Code) bool
}

// MethodOption configures NewMethodLimiter.
type MethodOption func(*MethodLimiter)

// CountCodes makes a MethodLimiter count only the admitted calls that end
// with one of cs, as login methods are protected: CountCodes(
// codes.Unauthenticated, codes.PermissionDenied) counts failed attempts
// only. A call's code is its handler's error's (status.Code), OK for nil;
// a streaming call's is known when its handler returns. Every other
// admitted call gives its unit back then (see runtime.Hold); a handler
// that panics keeps it. The Limiter must be a runtime.Holder, as the
// Limiters of memlimit and redislimit and the one runtime.Operate returns
// are; NewMethodLimiter returns an error otherwise.
func CountCodes(cs ...codes.Code) MethodOption {
	cs = slices.Clone(cs)
	return func(m *MethodLimiter) {
		m.count = func(c codes.Code) bool { return slices.Contains(cs, c) }
	}
}

// NewMethodLimiter returns a MethodLimiter that decides through lim the
// calls of the methods in limits, keyed by key:
//
//	ml, err := ratelimitgrpc.NewMethodLimiter(limiter, map[string]runtime.Limit{
//		verifypb.Verifier_SendCode_FullMethodName: {Name: "Verifier.SendCode", Window: time.Minute, Max: 20},
//	}, ratelimitgrpc.ByPeer())
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(ml.Unary()), grpc.ChainStreamInterceptor(ml.Stream()))
//
// A key of limits is a full method name, "/package.Service/Method", as the
// generated *_FullMethodName constants spell it. It returns an error, and
// no MethodLimiter, when lim or key is nil, a method name is malformed or
// a limit is invalid (runtime.Limit.Validate). limits is copied.
func NewMethodLimiter(lim runtime.Limiter, limits map[string]runtime.Limit, key KeyFunc, opts ...MethodOption) (*MethodLimiter, error) {
	switch {
	case lim == nil:
		return nil, errors.New("ratelimitgrpc: NewMethodLimiter: nil Limiter; pass e.g. memlimit.New()")
	case key == nil:
		return nil, errors.New("ratelimitgrpc: NewMethodLimiter: nil KeyFunc; pass e.g. ratelimitgrpc.ByPeer()")
	}
	m := &MethodLimiter{lim: lim, limits: make(map[string]runtime.Limit, len(limits)), key: key}
	for method, l := range limits {
		if svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/"); !strings.HasPrefix(method, "/") || !ok || svc == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("ratelimitgrpc: NewMethodLimiter: method %q is not a full method name such as \"/package.Service/Method\"", method)
		}
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("ratelimitgrpc: NewMethodLimiter: limit of %s: %w", method, err)
		}
		m.limits[method] = l
	}
	for _, o := range opts {
		if o != nil {
			o(m)
		}
	}
	if _, holds := lim.(runtime.Holder); !holds {
		if m.count != nil {
			return nil, fmt.Errorf("ratelimitgrpc: NewMethodLimiter: CountCodes needs a runtime.Holder, which %T is not; pass a memlimit or redislimit Limiter, or runtime.Operate's", lim)
		}
		for method, l := range m.limits {
			if l.Algorithm == runtime.Concurrency {
				return nil, fmt.Errorf("ratelimitgrpc: NewMethodLimiter: the concurrency limit of %s needs a runtime.Holder, which %T is not; pass a memlimit or redislimit Limiter, or runtime.Operate's", method, lim)
			}
		}
	}
	return m, nil
}

// Unary returns the interceptor that limits unary methods; see
// MethodLimiter.
func (m *MethodLimiter) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		hold, trailer, err := m.admit(ctx, info.FullMethod)
		if err != nil {
			if trailer != nil {
				// SetTrailer fails only outside a server call; the status
				// answers the call without it.
				_ = grpc.SetTrailer(ctx, trailer)
			}
			return nil, err
		}
		if hold.inFlight {
			kept, stop := runtime.Keep(ctx, hold.Hold)
			defer m.release(ctx, hold.Hold, stop)
			return handler(kept, req)
		}
		resp, err := handler(ctx, req)
		m.settle(ctx, hold.Hold, err)
		return resp, err
	}
}

// Stream returns the interceptor that limits streaming methods, each call
// once, when it starts; see MethodLimiter.
func (m *MethodLimiter) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		hold, trailer, err := m.admit(ss.Context(), info.FullMethod)
		if err != nil {
			if trailer != nil {
				ss.SetTrailer(trailer)
			}
			return err
		}
		if hold.inFlight {
			kept, stop := runtime.Keep(ss.Context(), hold.Hold)
			defer m.release(ss.Context(), hold.Hold, stop)
			return handler(srv, keptStream{ss, kept})
		}
		err = handler(srv, ss)
		m.settle(ss.Context(), hold.Hold, err)
		return err
	}
}

// keptStream is a ServerStream whose context is the call's, kept by
// runtime.Keep while the call holds a permit.
type keptStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s keptStream) Context() context.Context { return s.ctx }

// release ends the renewals of a call that held a permit and gives the
// permit back, when its handler returns or panics. A permit lost meanwhile
// is released too; an Operate limiter's observers are told.
func (m *MethodLimiter) release(ctx context.Context, hold runtime.Hold, stop func()) {
	stop()
	_ = hold.Settle(context.WithoutCancel(ctx), 1)
}

// admission is what admit returns for a call it admitted.
type admission struct {
	// Hold is the call's, when it is settled: by its code, or, if
	// inFlight, when it ends, to release its permit.
	runtime.Hold
	inFlight bool
}

// settle gives back the unit of a held call whose code, from the
// handler's error err, does not count. A failed settlement keeps the
// unit, erring toward denial; an Operate limiter's observers are told.
func (m *MethodLimiter) settle(ctx context.Context, hold runtime.Hold, err error) {
	if hold != nil && !m.count(status.Code(err)) {
		_ = hold.Settle(ctx, 0)
	}
}

// admit decides a call of method and returns nil to serve it, with the
// call's Hold when it is settled by its code, or the status error that
// answers it with, for a denial, the pushback trailer.
func (m *MethodLimiter) admit(ctx context.Context, method string) (admission, metadata.MD, error) {
	l, ok := m.limits[method]
	if !ok {
		return admission{}, nil, nil
	}
	k, err := m.key(ctx)
	if err != nil {
		return admission{}, nil, status.Error(codes.InvalidArgument, err.Error())
	}
	var a admission
	req := runtime.Request{Limit: l, Key: k}
	if a.inFlight = l.Algorithm == runtime.Concurrency; a.inFlight || m.count != nil {
		a.Hold, err = runtime.Admit(ctx, m.lim, req)
	} else {
		err = runtime.Enforce(ctx, m.lim, req)
	}
	if err == nil {
		return a, nil, nil
	}
	var le *runtime.LimitError
	if !errors.As(err, &le) {
		// Whatever the limiter's error, it made no decision; its text
		// describes the server's infrastructure, not the call.
		err = fmt.Errorf("%w: %w", runtime.ErrUnavailable, err)
	}
	st, _ := Status(err)
	md, _ := pushback(err)
	return admission{}, md, st.Err()
}
