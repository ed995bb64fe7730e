package runtime

// Source says which part of a Limiter made a decision, so that metrics can
// tell a decision of the shared store from one made in process.
type Source uint8

const (
	// SourceStore is a decision of the limiter's own counts: Redis for
	// runtime/redislimit, the process for memlimit.Limiter.
	SourceStore Source = iota
	// SourceDenyCache is a denial answered in process from an earlier
	// denial of the store that is still in force; the store was not asked.
	SourceDenyCache
	// SourceFallback is a decision of the fallback limiter, made while the
	// store was unavailable.
	SourceFallback
	// SourceFailOpen is an admission without a decision, made because the
	// store was unavailable and the limiter fails open.
	SourceFailOpen
	// SourceLease is an admission made in process from units that the
	// store granted this limiter in advance, and recorded as admitted
	// when it granted them (see redislimit.WithLeases).
	SourceLease
)

// String returns the source's name as metrics label it: "store",
// "deny-cache", "fallback", "fail-open" or "lease".
func (s Source) String() string {
	switch s {
	case SourceStore:
		return "store"
	case SourceDenyCache:
		return "deny-cache"
	case SourceFallback:
		return "fallback"
	case SourceFailOpen:
		return "fail-open"
	case SourceLease:
		return "lease"
	}
	return "unknown"
}
