// Package errcalendar holds calendar windows that do not generate.
package errcalendar

import "context"

// Bad has one mistake per method.
type Bad interface {
	//ratelimit:window=2mo max=10
	TwoMonths(ctx context.Context) error

	//ratelimit:window=1mo tz=Europe/Berln max=10
	UnknownZone(ctx context.Context) error

	//ratelimit:window=24h tz=Europe/Berlin max=10
	ZoneWithoutCalendar(ctx context.Context) error

	//ratelimit:window=1d max=10 algo=sliding-window
	SlidingCalendar(ctx context.Context) error

	//ratelimit:window=1w max=10 burst=5
	BurstOnCalendar(ctx context.Context) error

	//ratelimit:window=1month max=10
	SpeltOut(ctx context.Context) error

	//ratelimit:window=1m max=10
	//ratelimit:window=1mo max=1000
	Several(ctx context.Context) error

	//ratelimit:concurrency=2 tz=UTC
	Permits(ctx context.Context) error
}
