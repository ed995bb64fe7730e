// Package multilimit has methods that must pass several limits at once.
package multilimit

import (
	"context"
	"strings"
)

// Message is sent to an address.
type Message struct {
	Email  string
	Tenant string
	Parts  []string
}

// Notifier sends messages.
type Notifier interface {
	// SendCode has two limits on the same key: the key is computed once.
	//
	//ratelimit:key=strings.ToLower(m.Email) window=1m max=3
	//ratelimit:key=strings.ToLower(m.Email) window=24h max=10 name=Notifier.SendCode.daily
	SendCode(ctx context.Context, m Message) error

	// Broadcast limits per tenant and in total, with different algorithms,
	// and charges one unit per part against the tenant.
	//
	//ratelimit:key=m.Tenant window=1s max=50 algo=token-bucket burst=100 cost=len(m.Parts)
	//ratelimit:window=1s max=1000 algo=sliding-window name=broadcast-total
	//ratelimit:key=m.Tenant,m.Email window=1m max=5 algo=gcra name=Notifier.Broadcast.per-recipient
	Broadcast(ctx context.Context, m Message) (int, error)

	// Charge has a constant cost and a uint64 cost.
	//
	//ratelimit:key=tenant window=1m max=10 cost=2 algo=fixed-window
	//ratelimit:key=tenant window=1h max=1000 cost=bytes name=Notifier.Charge.bytes algo=sliding-window
	Charge(ctx context.Context, tenant string, bytes uint64) error
}

var _ = strings.ToLower

// Worker is a concrete type with several limits on a method.
type Worker struct{}

// Run is limited per second and per minute, without a key.
//
//ratelimit:window=1s max=5 algo=gcra
//ratelimit:window=1m max=100 name=Worker.Run.minute
func (w *Worker) Run(ctx context.Context, job string) error { return nil }

// Batch costs the same computed amount against two limits: it is
// computed once.
//
//ratelimit:key=job cost=len(strings.Fields(job)) window=1s max=50
//ratelimit:cost=len(strings.Fields(job)) window=1s max=500 name=Worker.Batch.total algo=sliding-window
func (w *Worker) Batch(ctx context.Context, job string) error { return nil }
