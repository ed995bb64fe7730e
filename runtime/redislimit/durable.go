package redislimit

import "errors"

// ErrNotReplicated is the cause of a decision that WithDurable could not
// make durable: not every replica of the node that recorded it
// acknowledged its writes within the wait, or the node had fewer replicas
// connected than it has had. Its admissions stay counted on that node. Check
// the replicas (INFO replication on the primary); once a replica is gone for
// good, docs/redis.md says how to lower the count.
var ErrNotReplicated = errors.New("ratelimit: redis replicas did not acknowledge the decision in time")
