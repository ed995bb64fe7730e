package memlimit

import (
	"slices"
	"unsafe"
)

// concurrency is a key's permits of a runtime.Concurrency limit: the live
// ones, and those whose lease ended since an operation last dropped them
// (Peek drops none), each with its id and the time (µs) its lease ends, in
// no order, as a renewal moves one's end later. Each permit takes 16 bytes; a call adds
// one only when fewer than Max are live, so a key holds at most the
// largest Max it was admitted under, and release shrinks the slice once a
// quarter of it is in use. A commit's receipt (verdict.scratch) is the id
// of the permit it took.
//
// next numbers the permits from 1 and never goes back, not even on Reset,
// so that no id is given twice in the entry's life: a Settle that comes
// after its permit expired cannot release a permit another call took
// since. An entry evicted and made again numbers from 1 anew; the Hold
// tells the two apart by the entry itself (see permitHold).
type concurrency struct {
	permits []permit
	next    int64
}

// permit is one call's permit: its id and the end of its lease (µs).
type permit struct{ id, until int64 }

// drop forgets the permits whose lease ended by now.
func (c *concurrency) drop(now int64) {
	c.permits = slices.DeleteFunc(c.permits, func(p permit) bool { return p.until <= now })
}

// look returns the verdict on a call at now without dropping anything:
// Remaining counts the permits live at now, ResetAfter runs until the last
// lease ends, and RetryAfter is 0, as nothing says when a call ends.
func (c *concurrency) look(now int64, p params) verdict {
	var live, last int64
	for _, q := range c.permits {
		if q.until > now {
			live++
			last = max(last, q.until)
		}
	}
	v := verdict{remaining: max(0, p.max-live), count: live}
	if live > 0 {
		v.reset = last - now
	}
	// A lower Max takes no permit away: it only refuses new ones while
	// Max or more are held.
	v.ok = live+p.cost <= p.max
	return v
}

func (c *concurrency) check(now int64, p params) verdict {
	c.drop(now)
	return c.look(now, p)
}

// commit takes a permit for the call that check admitted, leasing it until
// now+window.
func (c *concurrency) commit(now int64, p params, v *verdict) {
	if len(c.permits) == cap(c.permits) {
		// check admitted the call, so the permits live are fewer than
		// Max: grow by doubling, up to Max.
		n := max(len(c.permits)+1, min(2*cap(c.permits), int(p.max)))
		c.permits = append(make([]permit, 0, n), c.permits...)
	}
	c.next++
	c.permits = append(c.permits, permit{id: c.next, until: now + p.window})
	v.remaining = p.max - v.count - 1
	v.reset = max(v.reset, p.window)
	v.scratch = c.next
}

// live drops the permits whose lease ended by now, and returns the index
// of permit id, or -1 when it is not live.
func (c *concurrency) live(now, id int64) int {
	c.drop(now)
	return c.index(id)
}

func (c *concurrency) index(id int64) int {
	return slices.IndexFunc(c.permits, func(q permit) bool { return q.id == id })
}

// renew moves the end of live permit id's lease to until.
func (c *concurrency) renew(id, until int64) { c.permits[c.index(id)].until = until }

// release forgets permit i, shrinking the slice when a quarter of it is in
// use, so that a key's memory follows the calls it holds.
func (c *concurrency) release(i int) {
	last := len(c.permits) - 1
	c.permits[i] = c.permits[last]
	c.permits = c.permits[:last]
	if cap(c.permits) > 4 && len(c.permits) <= cap(c.permits)/4 {
		c.permits = append(make([]permit, 0, 2*len(c.permits)), c.permits...)
	}
}

// end returns when the last permit's lease ends, or floor if that is
// later.
func (c *concurrency) end(floor int64) int64 {
	for _, q := range c.permits {
		floor = max(floor, q.until)
	}
	return floor
}

// first returns when the first lease ends, or 0 when no permit is held.
func (c *concurrency) first() int64 {
	var first int64
	for _, q := range c.permits {
		if first == 0 || q.until < first {
			first = q.until
		}
	}
	return first
}

// permitBytes is what a permit costs.
const permitBytes = int64(unsafe.Sizeof(permit{}))

// bytes returns what the permits' slice holds outside the entry.
func (c *concurrency) bytes() int64 { return int64(cap(c.permits)) * permitBytes }
