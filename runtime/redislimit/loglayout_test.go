package redislimit

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The layouts of a sliding log in Redis (lua/sliding_log.lua), for the
// tests that read or write one directly. A ring: a 20-byte header, then cap
// slots of 7 bytes, entry i in slot (start+i) % cap. A small log (Max up to
// 128): smallLogMark, then its entries, oldest first, 7 bytes each.
const (
	logHeaderBytes = 20
	logEntryBytes  = 7
)

type logHeader struct {
	start, n, cap int
	newest        int64
}

func logHeaderOf(v string) logHeader {
	b := []byte(v)
	return logHeader{
		start:  int(binary.LittleEndian.Uint32(b[0:])),
		n:      int(binary.LittleEndian.Uint32(b[4:])),
		cap:    int(binary.LittleEndian.Uint32(b[8:])),
		newest: int64(binary.LittleEndian.Uint64(b[12:])),
	}
}

// logEntries returns the entries of the log v, oldest first.
func logEntries(t *testing.T, v string) []int64 {
	t.Helper()
	if len(v)%logEntryBytes == 0 {
		require.Equal(t, smallLogMark, v[:len(smallLogMark)], "a small log starts with its mark")
		var out []int64
		for at := len(smallLogMark); at < len(v); at += logEntryBytes {
			out = append(out, entryAt(v, at))
		}
		return out
	}
	h := logHeaderOf(v)
	require.Len(t, v, logHeaderBytes+logEntryBytes*h.cap, "a log's length is its header and its slots")
	var out []int64
	for i := range h.n {
		out = append(out, entryAt(v, logHeaderBytes+logEntryBytes*((h.start+i)%h.cap)))
	}
	return out
}

// entryAt returns the 7-byte signed time at byte at of v.
func entryAt(v string, at int) int64 {
	var b [8]byte
	copy(b[:], v[at:at+logEntryBytes])
	if b[6]&0x80 != 0 {
		b[7] = 0xff
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// logLen returns how many entries the log at skey holds, those that
// stopped counting and were not yet dropped included (0 for no key).
func logLen(t *testing.T, c redis.UniversalClient, skey string) int64 {
	t.Helper()
	v, err := c.Get(context.Background(), skey).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	require.NoError(t, err)
	return int64(len(logEntries(t, v)))
}

// offsetInSmallLog reports whether a SETRANGE at offset writes a small
// log's entries: a ring's entries start at offsets 20 plus a multiple of 7.
func offsetInSmallLog(offset string) bool {
	at, err := strconv.Atoi(offset)
	return err == nil && at > 0 && at%logEntryBytes == 0
}

// smallLogOf returns the small log of entries (oldest first).
func smallLogOf(entries ...int64) string {
	b := []byte(smallLogMark)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint64(b, uint64(e))[:len(b)+logEntryBytes]
	}
	return string(b)
}

// logOf returns the ring of entries (oldest first) with start 0 and cap
// their number, as the script writes a log of Max above 128 whole.
func logOf(entries ...int64) string {
	b := make([]byte, logHeaderBytes, logHeaderBytes+logEntryBytes*len(entries))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(entries)))
	binary.LittleEndian.PutUint32(b[8:], uint32(len(entries)))
	if len(entries) > 0 {
		binary.LittleEndian.PutUint64(b[12:], uint64(entries[len(entries)-1]))
	}
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint64(b, uint64(e))[:len(b)+logEntryBytes]
	}
	return string(b)
}

func TestLogLayoutRoundTrip(t *testing.T) {
	v := logOf(-5, 0, 1796043869202299)
	require.Equal(t, logHeader{n: 3, cap: 3, newest: 1796043869202299}, logHeaderOf(v))
	require.Equal(t, []int64{-5, 0, 1796043869202299}, logEntries(t, v))
	require.Equal(t, []int64{-5, 0, 1796043869202299}, logEntries(t, smallLogOf(-5, 0, 1796043869202299)))
	require.Len(t, smallLogOf(1), 28)
	// The mark reads as a ring's header no ring has.
	require.Equal(t, logHeader{start: 1<<32 - 1, n: 1, cap: 1, newest: 1 << 62}, logHeaderOf(smallLogMark))
}

// monitorArgs returns the arguments of a command as MONITOR prints it: each
// quoted, with the escapes of Redis's sdscatrepr.
func monitorArgs(t *testing.T, s string) []string {
	t.Helper()
	var args []string
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		var b []byte
		for i++; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' {
				b = append(b, s[i])
				continue
			}
			i++
			require.Less(t, i, len(s), "escape at the end of %q", s)
			switch s[i] {
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'a':
				b = append(b, '\a')
			case 'b':
				b = append(b, '\b')
			case 'x':
				require.Less(t, i+2, len(s), "\\x at the end of %q", s)
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				require.NoError(t, err, "\\x in %q", s)
				b = append(b, byte(v))
				i += 2
			default:
				b = append(b, s[i])
			}
		}
		args = append(args, string(b))
	}
	return args
}

func TestMonitorArgs(t *testing.T) {
	require.Equal(t, []string{"SET", "k", "a \"b\"\x00\xff\n\\", "PX", "5"},
		monitorArgs(t, `"SET" "k" "a \"b\"\x00\xff\n\\" "PX" "5"`+"\n"))
}
