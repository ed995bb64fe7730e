// Package errkey has keys that parse but do not type-check, or have types
// that cannot be keys.
package errkey

import "context"

// Prefix is a constant.
const Prefix = "orders"

// Order has fields of several kinds.
type Order struct {
	ID    string
	Total float64
	Items map[string]int
}

func split(s string) (string, string) { return s, s }

// Keys has one mistake per method.
type Keys interface {
	//ratelimit:key=emial window=1m max=3
	Typo(ctx context.Context, email string) error

	//ratelimit:key=order.Id window=1m max=3
	Field(ctx context.Context, order Order) error

	//ratelimit:key=order window=1m max=3
	Struct(ctx context.Context, order Order) error

	//ratelimit:key=order.Total window=1m max=3
	Float(ctx context.Context, order Order) error

	//ratelimit:key=order.ID,order.Items window=1m max=3
	Map(ctx context.Context, order Order) error

	//ratelimit:key=rand.Int() window=1m max=3
	Ambiguous(ctx context.Context, id string) error

	//ratelimit:key=uuid.NewString() window=1m max=3
	NoSuchPackage(ctx context.Context, id string) error

	//ratelimit:key=split(id) window=1m max=3
	TwoValues(ctx context.Context, id string) error

	//ratelimit:key=string window=1m max=3
	Type(ctx context.Context, id string) error

	//ratelimit:key=id,nosuch window=1m max=3
	SecondPart(ctx context.Context, id string) error

	//ratelimit:key=ctx window=1m max=3
	Context(ctx context.Context, id string) error

	//ratelimit:key=req.ID window=1m max=3
	Unnamed(context.Context, Order) error

	//ratelimit:key=request.ID window=1m max=3
	Abbreviated(ctx context.Context, req Order) error

	//ratelimit:key="req.ID" window=1m max=3
	Quoted(ctx context.Context, req Order) error

	//ratelimit:key=1 window=1m max=3
	Number(ctx context.Context, req Order) error

	//ratelimit:key=Prefix,len(Prefix) window=1m max=3
	AllConstant(ctx context.Context, req Order) error

	//ratelimit:key=Prefix,req.ID window=1m max=3
	ConstantPart(ctx context.Context, req Order) error

	//ratelimit:key=in.ID window=1m max=3
	Blank(_ context.Context, _ Order) error
}

// Svc is a concrete type.
type Svc struct{ tenant string }

// Recv keys on the receiver, which the wrapper does not have.
//
//ratelimit:key=s.tenant window=1m max=3
func (s *Svc) Recv(id string) error { return nil }
