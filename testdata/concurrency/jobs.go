// Package concurrency limits calls in flight, with concurrency=.
package concurrency

import (
	"context"
	"io"
)

// Request is a job for a tenant.
type Request struct {
	TenantID string
	Model    string
}

// Report is what a job produced.
type Report struct{ Pages int }

// Jobs runs tenants' jobs.
type Jobs interface {
	// Render holds one of a tenant's two permits while it runs.
	//
	//ratelimit:key=req.TenantID concurrency=2
	Render(ctx context.Context, req Request) (*Report, error)

	// Export is at most 10 per minute and 3 in flight per tenant, each
	// on a one-minute lease, only the second in shadow mode.
	//
	//ratelimit:key=req.TenantID window=1m max=10
	//ratelimit:key=req.TenantID concurrency=3 lease=1m name=Jobs.Export.inflight mode=shadow
	Export(ctx context.Context, req Request, w io.Writer) (n int64, err error)

	// Train counts failed runs only, and holds one of 4 permits per
	// model, shared with nobody else, while it runs: it returns only an
	// error.
	//
	//ratelimit:key=req.TenantID window=1h max=5 cost=2 refund=err == nil
	//ratelimit:key=req.Model concurrency=4 name=Jobs.Train.perModel
	Train(ctx context.Context, req Request) error

	// Summarize reserves 100 tokens, counts those it used, and holds one
	// of 8 permits per tenant; its results are named.
	//
	//ratelimit:key=req.TenantID window=1m max=10_000 cost=100 settle=tokens algo=token-bucket
	//ratelimit:key=req.TenantID concurrency=8 name=Jobs.Summarize.inflight
	Summarize(ctx context.Context, req Request) (summary string, tokens int, failed error)

	// Convert waits up to 5s for one of a tenant's two permits, in its
	// turn, rather than be denied.
	//
	//ratelimit:key=req.TenantID concurrency=2 wait=5s
	Convert(ctx context.Context, req Request) (*Report, error)

	// Index counts failed runs only, and waits up to a minute and a half
	// for room and for one of a tenant's two permits.
	//
	//ratelimit:key=req.TenantID window=1m max=20 refund=err == nil
	//ratelimit:key=req.TenantID concurrency=2 wait=1m30s name=Jobs.Index.inflight
	Index(ctx context.Context, req Request) (pages int, err error)

	// Ping holds the one permit of every caller, and has no context, so
	// its permit is renewed but it cannot be told when it is lost.
	//
	//ratelimit:concurrency=1 lease=10s
	Ping() error

	// Upload takes its context from its stream, which the wrapper cannot
	// replace by Keep's.
	//
	//ratelimit:concurrency=4
	Upload(stream Stream) error

	// Status is not limited.
	Status(ctx context.Context) (string, error)
}

// Stream is a client's stream of uploads.
type Stream interface {
	Context() context.Context
	Recv() ([]byte, error)
}
