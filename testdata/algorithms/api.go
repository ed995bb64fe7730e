// Package algorithms uses every algorithm, with and without burst=.
package algorithms

import "context"

// API is an HTTP API.
type API interface {
	// Log is the default, spelt out: the Limit has no Algorithm field.
	//
	//ratelimit:key=user window=1m max=100 algo=sliding-log
	Log(ctx context.Context, user string) error

	// Window counts in constant memory; max above 128 does not warn.
	//
	//ratelimit:key=user window=1h max=5000 algo=sliding-window
	Window(ctx context.Context, user string) error

	//ratelimit:key=user window=1s max=10 algo=fixed-window
	Fixed(ctx context.Context, user string) error

	// Bucket refills 50 tokens a second into a bucket of 100.
	//
	//ratelimit:key=user window=1s max=50 algo=token-bucket burst=100
	Bucket(ctx context.Context, user string) error

	// BucketDefault has a bucket of max tokens.
	//
	//ratelimit:key=user window=1m max=20 algo=token-bucket
	BucketDefault(ctx context.Context, user string) error

	//ratelimit:key=user window=1s max=5 algo=gcra burst=1
	Meter(ctx context.Context, user string) error

	//ratelimit:key=user window=10m max=600 algo=gcra
	MeterDefault(ctx context.Context, user string) error

	// Big and Huge are sliding logs of more than 100,000 entries: warnings
	// at max=.
	//
	//ratelimit:key=user window=1h max=100001
	Big(ctx context.Context, user string) error

	//ratelimit:key=user algo=sliding-log max=1_000_000 window=24h
	Huge(ctx context.Context, user string) error
}
