// Package collisions names parameters, methods, type parameters and
// package-level declarations like the identifiers the generator uses: the
// generated code must neither collide with them nor be shadowed by them.
package collisions

import (
	"context"
	"strconv"
)

// limitServiceDo is the name the generator would give a limit variable.
var limitServiceDo = strconv.Itoa(1)

// limitServiceMultiHourly is the name the generator would give the
// second limit of Multi.
var limitServiceMultiHourly = 2

// r is the receiver name the generator prefers.
func r() {}

// RateLimited is not a wrapper; the generated names have a type after it.
type RateLimited struct{}

// Service has parameters named like packages and generated locals.
type Service interface {
	//ratelimit:key=runtime,strconv,limiter,key,next window=1m max=1
	Do(runtime string, strconv int, limiter bool, key []byte, next uint8) error

	//ratelimit:key=ctx,err,d,b,buf,num,zero window=1m max=1
	Again(ctx string, err int64, d string, b string, buf string, num int, zero uint) (int, error)

	//ratelimit:key=time window=1m max=1
	When(context context.Context, time int) error

	//ratelimit:key=string,in1 window=1m max=1
	Str(string string, in1 int, _ float64) error

	// Multi has parameters named like the locals of a method with several
	// limits and costs, and like the generated cost conversion.
	//
	//ratelimit:key=key cost=rateLimitCost window=1m max=3
	//ratelimit:key=key cost=rateLimitRequestCost window=1h max=30 name=hourly
	Multi(reqs, ds, err, key, cost string, rateLimitCost uint, rateLimitRequestCost int) error

	// One has a computed cost and parameters named like its locals.
	//
	//ratelimit:key=d cost=len(cost) window=1m max=3
	One(d string, err int, cost []byte) error

	// next and limiter are methods: the wrapper's fields take other names.
	next() error
	limiter() error
}

// Box has a type parameter named like the runtime package.
type Box[runtime any] interface {
	//ratelimit:window=1s max=1
	Put(v runtime) (runtime, error)
}

var _ = r
