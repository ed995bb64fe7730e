// Package sweep lets runtime/redislimit let go of what its in-memory
// fallback kept from an outage, without making sweeping part of runtime's
// API: after Redis recovers, no decision visits the fallback's keys again.
package sweep

// Memory drops the expired keys of l when l is a *runtime.MemoryLimiter and
// returns how many keys remain; ok is false for any other Limiter. Package
// runtime sets it when it is initialised, and nothing else does.
var Memory func(l any) (remaining int, ok bool)
