// want package:"hasDirectives"

// Package directives has one mistake per method, taken from the
// generator's error cases (testdata/errkey, errparse, errmax, errplace,
// errconcurrency and nearmiss of the repository).
package directives

import "context"

// Order has a field that can be a key and one that cannot.
type Order struct {
	ID    string
	Total float64
}

// Service has the mistakes.
type Service interface {
	// want +1 `^key part emial: undefined: emial; did you mean email\?$`
	//ratelimit:key=emial window=1m max=3
	Typo(ctx context.Context, email string) error

	// want +1 `^key part order.Total has type float64, which cannot be a key: `
	//ratelimit:key=order.Total window=1m max=3
	Float(ctx context.Context, order Order) error

	// want +1 `^unknown option "windw"; did you mean "window"\?$`
	//ratelimit:key=id windw=1m max=3
	Option(ctx context.Context, id string) error

	// want +1 `^duplicate option "window"; it is already set at directives.go:31:21: remove one$`
	//ratelimit:key=id window=1m window=2m max=3
	Duplicate(ctx context.Context, id string) error

	// want +1 `^window "soon" is not a Go duration; write e.g. window=60s`
	//ratelimit:key=id window=soon max=3
	Window(ctx context.Context, id string) error

	// want +1 `^max must be at least 1; got 0$`
	//ratelimit:key=id window=1m max=0
	Max(ctx context.Context, id string) error

	// want +1 `^comment looks like a //ratelimit: directive but is ignored: there is a space after "//"`
	// ratelimit:key=id window=1m max=3
	Spaced(ctx context.Context, id string) error

	// want +1 `^refund condition err has type error, but refund= needs a condition: `
	//ratelimit:key=id window=1m max=3 refund=err
	Refund(ctx context.Context, id string) error

	// want +1 `^settle resp.ID has type string, but settle= must be an integer: `
	//ratelimit:key=id window=1m max=3 settle=resp.ID
	Settle(ctx context.Context, id string) (*Order, error)

	// want +1 `^concurrency= cannot be combined with refund=: a permit is always released when the call returns, or panics; `
	//ratelimit:key=id concurrency=2 refund=err == nil
	ConcurrencyRefund(ctx context.Context, id string) error

	// A call may wait for a permit, and a call settled by its outcome for
	// room, as long as wait= is a positive Go duration.
	//
	//ratelimit:key=id concurrency=2 wait=5s
	//ratelimit:key=id window=1m max=3 refund=err == nil wait=1s name=Service.Waits.rate
	Waits(ctx context.Context, id string) error

	// want +1 `^wait "1d" is not a Go duration: write e.g. wait=2s or wait=500ms$`
	//ratelimit:key=id concurrency=2 wait=1d
	ConcurrencyWait(ctx context.Context, id string) error

	// want +1 `^unknown time zone "Europe/Berln"; write an IANA time zone name`
	//ratelimit:key=id window=1mo tz=Europe/Berln max=3
	Zone(ctx context.Context, id string) error

	// want +1 `^tz= applies only to a calendar window \(window=1d, 1w, 1mo or 1y\)`
	//ratelimit:key=id window=24h tz=Europe/Berlin max=3
	ZoneOfDuration(ctx context.Context, id string) error

	// want +1 `^window=1d is a calendar window, and calendar windows are fixed windows`
	//ratelimit:key=id window=1d max=3 algo=gcra
	CalendarGCRA(ctx context.Context, id string) error

	// want +1 `^lease "100ms" is out of bounds: `
	//ratelimit:key=id concurrency=2 lease=100ms
	Lease(ctx context.Context, id string) error

	// want +1 `^cost len\(id\) is computed per call, but the method has several limits and one is a concurrency limit: `
	//ratelimit:key=id window=1m max=100 cost=len(id)
	//ratelimit:key=id concurrency=2 name=Service.Cost.inflight
	Cost(ctx context.Context, id string) error
}

// want +2 `^//ratelimit: is on function Plain, which is not a method: `
//
//ratelimit:key=id window=1m max=3
func Plain(id string) {}
