package redislimit

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The wire format between this package and lua/main.lua, every script's
// entry point. A script command carries:
//
//	KEYS     the storage keys of every limit of every call, in order; for
//	         a settle, then a marker key unique to it, in the same slot
//	ARGV[1]  a scriptMode
//	ARGV[2]  numbers, little-endian 64-bit integers: for each call now (µs,
//	         or -1 for the server's clock) and its number of limits, then
//	         for each limit its code (plus shadowFlag in shadow mode),
//	         window µs, max, burst, cost, for a calendar limit
//	         (codeCalendar) the previous window's start and the next
//	         window's end (see calendar.go), and for a settle or a renewal its
//	         receipt and the units it used (appendNums). modeUniform sends one limit's code, window µs,
//	         max, burst and cost, then one now shared by every call or one
//	         per call (appendUniform).
//
// The reply is one string of little-endian 64-bit integers (appendReply):
// for each call committed (1 or 0) and replyFields numbers per limit
// (allowed, remaining, retry µs, reset µs, receipt; readCall), or for
// modeUniform uniformFields per call (remaining*2 + allowed, retry µs,
// reset µs; uniformVerdict). A settle's committed says whether it applied
// (its marker was new), and its limits' numbers are 0 but allowed, which
// is 1 for a permit found lost. A renewal's committed says whether its
// permits were renewed, and allowed is 1 for each permit lost. The constants the
// scripts share with Go are written into them (luaConstants).

// A scriptMode is what ARGV[1] asks: decide, check only, settle (refund or
// charge what earlier admissions reserved, release permits), renew
// permits, or decide calls of one limit
// (see uniformAsk). Each is boxed once, as the
// command's argument.
type scriptMode any

var (
	modeDecide  scriptMode = "a"
	modeCheck   scriptMode = "c"
	modeSettle  scriptMode = "s"
	modeUniform scriptMode = "u"
	// modeRenew renews the permits of held calls (see permit.go).
	modeRenew scriptMode = "r"
	// modeLease runs lua/lease.lua (leasegrant.go).
	modeLease scriptMode = "l"
)

// shadowFlag is added to an algorithm's code for a limit in
// runtime.ModeShadow; it is above every code.
const shadowFlag = 8

const (
	// replyFields is how many numbers a reply holds per limit, after its
	// call's committed.
	replyFields = 5
	// uniformFields is how many numbers a uniform reply holds per call.
	uniformFields = 3
)

// smallLogMark starts a small sliding log, one of up to smallLogEntries
// entries whatever its Max (lua/sliding_log.lua, SL_MARK): it reads as a
// ring's header of start 2^32-1, n 1, cap 1, and newest 2^62, a start no
// ring has.
const smallLogMark = "\xff\xff\xff\xff\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00"

// smallLogEntries is the most entries a small sliding log holds (SL_SMALL):
// its mark and entries then fit the first smallLogPrefix bytes that the
// script reads of a log of larger Max.
const (
	smallLogEntries = 128
	smallLogPrefix  = len(smallLogMark) + 7*smallLogEntries
)

// luaConstants returns the constants the scripts share with Go, by the
// name the Lua files write them in: each algorithm's code, shadowFlag,
// the modes, the registry's initial entries and the small log's mark, as
// Lua literals. The script's text holds the literals in their place (see
// assembleScript), so a run pays nothing for them.
func luaConstants() map[string]string {
	c := map[string]string{"SHADOW_FLAG": strconv.Itoa(shadowFlag)}
	var unregistered []string
	for _, spec := range specsByCode {
		if spec.file != "" {
			c[spec.lua] = strconv.FormatInt(int64(spec.code), 10)
			unregistered = append(unregistered, "false")
		}
	}
	// The registry's initial entries, one per code (lua/header.lua).
	c["UNREGISTERED"] = strings.Join(unregistered, ", ")
	for _, m := range [...]struct {
		name string
		mode scriptMode
	}{{"DECIDE", modeDecide}, {"CHECK", modeCheck}, {"SETTLE", modeSettle}, {"UNIFORM", modeUniform}, {"RENEW", modeRenew}, {"LEASE", modeLease}} {
		c[m.name] = "'" + m.mode.(string) + "'"
	}
	var mark strings.Builder
	for i := range len(smallLogMark) {
		fmt.Fprintf(&mark, "\\%d", smallLogMark[i])
	}
	c["SL_MARK"] = "'" + mark.String() + "'"
	c["SL_SMALL"] = strconv.Itoa(smallLogEntries)
	c["OP_SHIFT"] = strconv.Itoa(opShift)
	// A call's op (see callOp), which no script mode asks alone.
	c["WAIT"] = "'w'"
	c["RELEASE"] = "'x'"
	c["SL_PREFIX_LAST"] = "'" + strconv.Itoa(smallLogPrefix-1) + "'"
	return c
}

// appendNums appends to nums the numbers of the requests of d at idx, in
// the layout of ARGV[2], the count of limits carrying d.op; with
// receipts, for a settle, each limit's receipt
// and the units it used (0 unless d.used says otherwise). They go as one
// string of little-endian 64-bit integers: one argument per call rather
// than six per limit, and the cheapest form for the script to read
// (struct.unpack).
func appendNums(nums []byte, d *resolvedCall, idx []int, receipts bool) []byte {
	le := binary.LittleEndian
	nums = le.AppendUint64(nums, uint64(d.now))
	nums = le.AppendUint64(nums, uint64(len(idx))+uint64(d.op)*opShift)
	for _, i := range idx {
		a := &d.asks[i]
		nums = le.AppendUint64(nums, uint64(a.code))
		nums = le.AppendUint64(nums, uint64(a.window))
		nums = le.AppendUint64(nums, uint64(a.max))
		nums = le.AppendUint64(nums, uint64(a.burst))
		nums = le.AppendUint64(nums, uint64(a.cost))
		if a.algo() == codeCalendar {
			nums = le.AppendUint64(nums, uint64(a.prev))
			nums = le.AppendUint64(nums, uint64(a.next))
		}
		if receipts {
			var used int64
			if d.used != nil {
				used = d.used[i]
			}
			nums = le.AppendUint64(nums, uint64(d.receipts[i]))
			nums = le.AppendUint64(nums, uint64(used))
		}
	}
	return nums
}

// A uniform script call (modeUniform) decides calls of one enforced
// limit each, the same limit for all: the commonest batch, and every lone
// call of one limit. The script reads the limit's numbers once, and
// answers three numbers per call, as it needs no receipt (a call within
// one slot is never refunded) and its calls are committed exactly when
// allowed.

// uniformAsk returns the limit that every call of batch decides alone,
// enforced, or nil if they do not.
func uniformAsk(batch []*call) *ask {
	a := &batch[0].d.asks[0]
	if !batch[0].d.uniform(batch[0].idx) {
		return nil
	}
	for _, c := range batch[1:] {
		if len(c.idx) != 1 || !c.d.uniform(c.idx) || !a.sameLimit(&c.d.asks[0]) {
			return nil
		}
	}
	return a
}

// uniform reports whether a, of a call of n limits, can be decided in a
// uniform script call.
// A calendar limit's boundaries do not fit the uniform layout.
func (a *ask) uniform(n int) bool { return n == 1 && a.code < shadowFlag && a.code != codeCalendar }

// sameLimit reports whether a and b are decided by the same numbers.
func (a *ask) sameLimit(b *ask) bool {
	return a.code == b.code && a.window == b.window && a.max == b.max && a.burst == b.burst && a.cost == b.cost
}

// appendUniform appends to nums the numbers of a uniform script call of
// the limit a at the times nows: a's numbers, then one now when every call
// shares it, one per call otherwise.
func appendUniform(nums []byte, a *ask, nows func(i int) int64, calls int) []byte {
	le := binary.LittleEndian
	for _, n := range [...]int64{a.code, a.window, a.max, a.burst, a.cost} {
		nums = le.AppendUint64(nums, uint64(n))
	}
	first := nows(0)
	same := true
	for i := 1; i < calls && same; i++ {
		same = nows(i) == first
	}
	if same {
		return le.AppendUint64(nums, uint64(first))
	}
	for i := range calls {
		nums = le.AppendUint64(nums, uint64(nows(i)))
	}
	return nums
}

// uniformVerdict reads one call's numbers of a uniform script call's reply:
// remaining*2 + allowed, retry and reset. The script forms remaining*2 +
// allowed as a double, exact because remaining is below the limit's
// capacity, at most runtime.MaxUnits (2^52), so the sum is below 2^53.
func uniformVerdict(f []int64) verdict {
	return verdict{ok: f[0]&1 == 1, remaining: f[0] >> 1, retry: f[1], reset: f[2]}
}

// readCall reads one call's part of a script reply into the verdicts (and
// receipts, when d keeps them) of the requests of d at idx, and returns
// what follows it.
func readCall(res []int64, d *resolvedCall, idx []int) (committed bool, rest []int64, err error) {
	if len(res) < 1+replyFields*len(idx) {
		return false, nil, errReply(len(res))
	}
	for j, i := range idx {
		f := res[1+replyFields*j:]
		d.vs[i] = verdict{ok: f[0] == 1, remaining: f[1], retry: f[2], reset: f[3]}
		if d.receipts != nil && d.op.decides() {
			d.receipts[i] = f[4]
		}
	}
	return res[0] == 1, res[1+replyFields*len(idx):], nil
}

// uniform reports whether the requests of d at idx can be decided in a
// uniform script call: a decision of one enforced limit, and no receipt to
// keep (a token bucket and GCRA settle without one).
func (d *resolvedCall) uniform(idx []int) bool {
	a := &d.asks[idx[0]]
	return d.op == opDecide && a.uniform(len(idx)) && (d.receipts == nil || a.code == codeTokenBucket || a.code == codeGCRA)
}

// uniformArgs returns the command that runs s to decide request i of d, in
// a uniform script call.
func uniformArgs(s *script, d *resolvedCall, i int) []any {
	args := append(s.scriptArgs(1), d.asks[i].key)
	nums := appendUniform(make([]byte, 0, 48), &d.asks[i], func(int) int64 { return d.now }, 1)
	return finishArgs(args, modeUniform, nums)
}

// readGroup reads the reply res of the script call for the requests of d
// at idx, uniform or not, into their verdicts (and receipts), and reports
// whether they were committed.
func readGroup(res []int64, d *resolvedCall, idx []int, uniform bool) (bool, error) {
	if !uniform {
		committed, _, err := readCall(res, d, idx)
		return committed, err
	}
	if len(res) != uniformFields {
		return false, errReply(len(res))
	}
	d.vs[idx[0]] = uniformVerdict(res)
	return d.vs[idx[0]].ok, nil
}

// errReply is a script reply of n numbers, unlike any the scripts give.
func errReply(n int) error {
	return fmt.Errorf("ratelimit: unexpected script reply of %d numbers; is the server Redis 5 or newer?", n)
}

// callArgs returns the command that runs s in mode for the requests of d
// at idx, in lua/main.lua's layout: a settle or a renewal carries its
// receipts, and a settle its marker (which is "" for any other call) as
// its last key.
func (r *Limiter) callArgs(s *script, mode scriptMode, d *resolvedCall, idx []int, marker string) []any {
	receipts := d.op.sendsReceipts()
	keys := len(idx)
	if marker != "" {
		keys++
	}
	args := s.scriptArgs(keys)
	for _, i := range idx {
		args = append(args, d.asks[i].key)
	}
	if marker != "" {
		args = append(args, marker)
	}
	return finishArgs(args, mode, appendNums(nil, d, idx, receipts))
}

// finishArgs completes the arguments of a script command: the number of
// keys, then ARGV. nums goes as it is, not copied: like the keys, it must
// not change until the command has run.
func finishArgs(args []any, mode scriptMode, nums []byte) []any {
	args[2] = len(args) - 3
	return append(args, any(mode), nums)
}

// appendReply appends the numbers of a script's reply, a string of
// little-endian 64-bit integers, to res.
func appendReply(res []int64, reply string) ([]int64, error) {
	if len(reply)%8 != 0 {
		return res, fmt.Errorf("ratelimit: unexpected script reply of %d bytes; is the server Redis 5 or newer?", len(reply))
	}
	for ; len(reply) >= 8; reply = reply[8:] {
		_ = reply[7]
		res = append(res, int64(uint64(reply[0])|uint64(reply[1])<<8|uint64(reply[2])<<16|uint64(reply[3])<<24|
			uint64(reply[4])<<32|uint64(reply[5])<<40|uint64(reply[6])<<48|uint64(reply[7])<<56))
	}
	return res, nil
}

// verdict is one limit's answer from a script; times in µs.
type verdict struct {
	ok                      bool
	remaining, retry, reset int64
}

func (v verdict) decision() runtime.Decision {
	return runtime.Decision{Allowed: v.ok, Remaining: int(v.remaining), RetryAfter: micros(v.retry), ResetAfter: micros(v.reset)}
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// scriptArgs starts the arguments of a command running s: the command,
// the script and room for the number of keys, which args sets once the
// keys follow.
func (s *script) scriptArgs(keys int) []any {
	return s.appendArgs(make([]any, 0, 3+keys+2))
}

// appendArgs is scriptArgs, appended to args.
func (s *script) appendArgs(args []any) []any {
	return append(args, cmdEvalSha, s.hash, nil)
}

// scriptOf returns the script that can decide the requests of d at idx.
func scriptOf(d *resolvedCall, idx []int) *script {
	code := d.asks[idx[0]].code % shadowFlag
	for _, i := range idx[1:] {
		if d.asks[i].code%shadowFlag != code {
			return mixedScript
		}
	}
	return codeScripts[code]
}

// batchScript returns the script that can decide every call of batch.
func batchScript(batch []*call) *script {
	s := scriptOf(&batch[0].d, batch[0].idx)
	for _, c := range batch[1:] {
		if scriptOf(&c.d, c.idx) != s {
			return mixedScript
		}
	}
	return s
}

// encodeBatch returns the script that decides batch in one call, and its
// command, built in bufs: uniform when every call is of one limit (see
// uniformAsk).
func encodeBatch(bufs *buffers, batch []*call) (s *script, args []any, uniform bool) {
	s = batchScript(batch)
	args = s.appendArgs(bufs.args[:0])
	for _, c := range batch {
		for j := range c.d.asks {
			// A pointer, which go-redis accepts, is not boxed anew.
			args = append(args, &c.d.asks[j].key)
		}
		if c.d.op == opSettle {
			args = append(args, &c.marker)
		}
	}
	nums, mode := bufs.nums[:0], batchMode(batch)
	if a := uniformAsk(batch); a != nil {
		nums, mode, uniform = appendUniform(nums, a, func(i int) int64 { return batch[i].d.now }, len(batch)), modeUniform, true
	} else {
		for _, c := range batch {
			nums = appendNums(nums, &c.d, c.idx, c.d.op.sendsReceipts())
		}
	}
	// nums is the command's until it has run; the next batch reuses it.
	bufs.nums = nums[:0]
	return s, finishArgs(args, mode, nums), uniform
}

// batchMode returns the mode of a batch's script call: its calls' when
// they all ask the same (a lone settle reads as one), else modeDecide;
// each call's count of limits says what it asks in any case.
func batchMode(batch []*call) scriptMode {
	op := batch[0].d.op
	for _, c := range batch[1:] {
		if c.d.op != op {
			return modeDecide
		}
	}
	return batch[0].d.mode()
}

// encodeSpread is encodeBatch for a batch spread over the slots of one
// Cluster node: its first key declared, the others after the script's
// arguments (see lua/main.lua, "Spread batches").
func encodeSpread(bufs *buffers, batch []*call) (s *script, args []any, uniform bool) {
	s, args, uniform = encodeBatch(bufs, batch)
	keys := args[2].(int)
	mode, nums := args[3+keys], args[4+keys]
	copy(args[6:], args[4:3+keys])
	args[2], args[4], args[5] = 1, mode, nums
	return s, args, uniform
}

// readSpread reads reply, the reply to encodeSpread's command (err if it
// failed), into each call of batch that the script decided, and returns
// the calls it left undecided, with the error that stopped it. It returns
// res for reuse, as readBatch does.
func readSpread(res []int64, reply string, err error, batch []*call, uniform bool) (_ []int64, left []*call, stop string) {
	if err != nil {
		return readBatch(res, reply, err, batch, uniform), nil, ""
	}
	if len(reply) < 8 {
		return readBatch(res, "", errReply(0), batch, uniform), nil, ""
	}
	ran := binary.LittleEndian.Uint64([]byte(reply[:8]))
	if ran > uint64(len(batch)) {
		return readBatch(res, "", errReply(len(reply)/8), batch, uniform), nil, ""
	}
	size := 0
	for _, c := range batch[:ran] {
		if uniform {
			size += 8 * uniformFields
		} else {
			size += 8 * (1 + replyFields*len(c.idx))
		}
	}
	if len(reply) < 8+size {
		return readBatch(res, "", errReply(len(reply)/8), batch, uniform), nil, ""
	}
	res = readBatch(res, reply[8:8+size], nil, batch[:ran], uniform)
	return res, batch[ran:], reply[8+size:]
}

// readBatch reads reply, the reply to encodeBatch's command (err if it
// failed), into each call of batch. It returns res, in which it decoded
// the reply's numbers, for reuse.
func readBatch(res []int64, reply string, err error, batch []*call, uniform bool) []int64 {
	if err == nil {
		res, err = appendReply(res, reply)
	}
	if uniform {
		if err == nil && len(res) != uniformFields*len(batch) {
			err = errReply(len(res))
		}
		for i, c := range batch {
			c.err = err
			if err == nil {
				c.committed, c.err = readGroup(res[uniformFields*i:uniformFields*(i+1)], &c.d, c.idx, true)
			}
		}
		return res
	}
	rest := res
	for _, c := range batch {
		if err != nil {
			c.err = err
			continue
		}
		c.committed, rest, c.err = readCall(rest, &c.d, c.idx)
		if c.err != nil {
			err = c.err
		}
	}
	return res
}
