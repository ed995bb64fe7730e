// Package calendar limits calls per calendar day, week, month and year,
// reset at midnight in a time zone rather than a window's length after
// the first call.
package calendar

import "context"

// Messenger sends messages to customers.
type Messenger interface {
	// SendSMS sends at most 50 text messages a day to each customer,
	// counted from midnight in Berlin.
	//ratelimit:key=customer window=1d tz=Europe/Berlin max=50
	SendSMS(ctx context.Context, customer, text string) error

	// Digest goes out at most 3 times a week, weeks starting on Monday
	// in New York.
	//ratelimit:key=customer window=1w max=3 tz=America/New_York
	Digest(ctx context.Context, customer string) error
}

// Exports runs data exports.
type Exports interface {
	// Run allows 1,000 exports per tenant and month, in UTC; an export that
	// fails gives its unit back.
	//ratelimit:key=tenant window=1mo max=1_000 refund=err != nil
	Run(ctx context.Context, tenant string) (string, error)

	// Archive allows 12 archives a year, counted in Tokyo, and 2 a
	// minute.
	//ratelimit:key=tenant window=1y tz=Asia/Tokyo max=12 algo=fixed-window name=Exports.Archive.yearly
	//ratelimit:key=tenant window=1m max=2 name=Exports.Archive.per-minute
	Archive(ctx context.Context, tenant string) error
}
