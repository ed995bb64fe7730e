package redislimit

import (
	"context"
	"encoding/binary"
	"fmt"
)

// The lease script's call (lua/lease.lua): one call releases the leases an
// instance is done with and grants it a new one, for one limit on one key.

// leases reports whether the algorithm of code leases: every rate-style
// one. The sliding log keeps per-call decisions, exact.
func leases(code int64) bool {
	switch code {
	case codeGCRA, codeTokenBucket, codeFixedWindow, codeSlidingWindow:
		return true
	}
	return false
}

// leaseRecordsSuffix follows a storage key to name its lease records. A
// storage key ends with its encoded key (see appendStorageKey), so the
// records' name is no storage key, and shares its slot.
const leaseRecordsSuffix = "!leases"

// A leaseAsk is one call of the lease script.
type leaseAsk struct {
	// key is the limit's storage key.
	key string
	// code, window (µs), max and burst are the limit's, as an ask holds
	// them; now is µs on the limiter's clock, or -1 for Redis's.
	code, window, max, burst, now int64
	// want is the units asked for, 0 to release only; life bounds the
	// lease's life in µs; id names it.
	want, life, id int64
	// release holds, for each lease given back, its id and the units it
	// did not use.
	release [][2]int64
}

// A leaseReply is what the script answered.
type leaseReply struct {
	// granted is the units granted, 0 when the limit had no room; life is
	// how long (µs, from the script's now) the lease lives.
	granted, life int64
	// remaining, retry (for a grant of 0) and reset are as a decision of
	// the limit reports them; retry and reset in µs.
	remaining, retry, reset int64
}

// leaseFields is how many numbers the lease script answers.
const leaseFields = 5

// args returns the command that runs the lease script for a.
func (a *leaseAsk) args() []any {
	le := binary.LittleEndian
	nums := make([]byte, 0, 64+16*len(a.release))
	for _, n := range [...]int64{a.code, a.window, a.max, a.burst, a.now, a.want, a.life, a.id} {
		nums = le.AppendUint64(nums, uint64(n))
	}
	for _, rel := range a.release {
		nums = le.AppendUint64(nums, uint64(rel[0]))
		nums = le.AppendUint64(nums, uint64(rel[1]))
	}
	args := append(leaseScript.scriptArgs(2), a.key, a.key+leaseRecordsSuffix)
	return finishArgs(args, modeLease, nums)
}

// lease runs the lease script for a, within the limiter's timeout.
func (r *Limiter) lease(ctx context.Context, a *leaseAsk) (leaseReply, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	res, err := r.runScript(ctx, r.client, leaseScript, a.args(), nil, true)
	if err != nil {
		return leaseReply{}, err
	}
	if len(res) != leaseFields {
		return leaseReply{}, fmt.Errorf("ratelimit: unexpected lease script reply of %d numbers", len(res))
	}
	return leaseReply{granted: res[0], life: res[1], remaining: res[2], retry: res[3], reset: res[4]}, nil
}
