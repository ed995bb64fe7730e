package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/protoctest"
)

// badProto is bad.proto up to the rpc under test, whose options start on
// line 11: an error at 11:5 is the first option's.
const badProto = `syntax = "proto3";
package bad.v1;
option go_package = "example.com/bad/badv1";
import "ratelimitgen/v1/limit.proto";
message User { int64 id = 1; string name = 2; }
message Req { string email = 1; User user = 2; repeated string tags = 3; double score = 4; int32 count = 5; }
message Res {}

service Verifier {
  rpc SendCode(Req) returns (Res) {
`

// TestBadDeclarations runs protoc with the plugin on declarations it
// refuses: each is an error at its option's line and column, and nothing
// is written.
func TestBadDeclarations(t *testing.T) {
	plugin := protoctest.Plugins(t, pluginPackage)
	for name, c := range map[string]struct{ options, want string }{
		"unknown field": {
			`option (ratelimitgen.v1.limit) = {key: "emial" window: "60s" max: 3};`,
			`bad.proto:11:5: rpc SendCode: key "emial": bad.v1.Req has no field "emial"; its fields are email, user, tags, score, count`,
		},
		"unknown nested field, the option on several lines": {
			"option (ratelimitgen.v1.limit) = {\n      key: \"user.uid\"\n      window: \"60s\"\n      max: 3\n    };",
			`bad.proto:11:5: rpc SendCode: key "user.uid": bad.v1.User has no field "uid"; its fields are id, name`,
		},
		"message field": {
			`option (ratelimitgen.v1.limit) = {key: "user" window: "60s" max: 3};`,
			`bad.proto:11:5: rpc SendCode: key "user": Req.user is a message: name one of its fields, e.g. user.id`,
		},
		"repeated field": {
			`option (ratelimitgen.v1.limit) = {key: "tags" window: "60s" max: 3};`,
			`bad.proto:11:5: rpc SendCode: key "tags": Req.tags is repeated`,
		},
		"double field": {
			`option (ratelimitgen.v1.limit) = {key: "score" window: "60s" max: 3};`,
			`bad.proto:11:5: rpc SendCode: key "score": Req.score is a double, whose equal values (0 and -0) have different keys`,
		},
		"path through a scalar": {
			`option (ratelimitgen.v1.limit) = {key: "email.domain" window: "60s" max: 3};`,
			`bad.proto:11:5: rpc SendCode: key "email.domain": Req.email is not a singular message, so no field can follow it`,
		},
		"bad window": {
			`option (ratelimitgen.v1.limit) = {key: "email" window: "60" max: 3};`,
			`bad.proto:11:5: rpc SendCode: window "60" is not a Go duration; write e.g. "60s", "5m" or "1h30m" (units ns, us, ms, s, m, h), or a calendar window: "1d", "1w", "1mo" or "1y"`,
		},
		"window finer than the limiter": {
			`option (ratelimitgen.v1.limit) = {window: "1500ns" max: 3};`,
			`bad.proto:11:5: rpc SendCode: window "1500ns" is not a whole number of microseconds, the limiter's resolution`,
		},
		"no window": {
			`option (ratelimitgen.v1.limit) = {key: "email" max: 3};`,
			`bad.proto:11:5: rpc SendCode: window is missing: write the period in which max units are admitted, e.g. window: "60s"`,
		},
		"no max": {
			`option (ratelimitgen.v1.limit) = {key: "email" window: "60s"};`,
			`bad.proto:11:5: rpc SendCode: max is missing or 0: write the units admitted per window, e.g. max: 10`,
		},
		"max beyond the sliding log": {
			`option (ratelimitgen.v1.limit) = {window: "60s" max: 2000000};`,
			`bad.proto:11:5: rpc SendCode: sliding-log limit "Verifier.SendCode" has Max 2000000; a sliding log stores every unit of its window, so it can be at most 1000000, which bounds a key's memory; use SlidingWindow (algo=sliding-window: never over Max, constant memory) for larger limits`,
		},
		"unknown algorithm": {
			`option (ratelimitgen.v1.limit) = {window: "60s" max: 3 algo: "leaky-bucket"};`,
			`bad.proto:11:5: rpc SendCode: unknown algo "leaky-bucket"; the algorithms are "sliding-log", "sliding-window", "fixed-window", "token-bucket", "gcra"`,
		},
		"burst without a bucket": {
			`option (ratelimitgen.v1.limit) = {window: "60s" max: 3 burst: 10};`,
			`bad.proto:11:5: rpc SendCode: burst applies only to algo "token-bucket" and "gcra", whose bucket it sizes; this limit uses "sliding-log": remove burst or choose one of them`,
		},
		"cost from a string": {
			`option (ratelimitgen.v1.limit) = {window: "60s" max: 3 cost: "email"};`,
			`bad.proto:11:5: rpc SendCode: cost "email": Req.email is a string: a cost is an integer field, or a repeated field whose length is the cost`,
		},
		"unknown status code": {
			`option (ratelimitgen.v1.limit) = {window: "60s" max: 3 count_codes: ["Unauthenticated"]};`,
			`bad.proto:11:5: rpc SendCode: count_codes: "Unauthenticated" is no status code (write "UNAUTHENTICATED"); name codes as gRPC does, e.g. "UNAUTHENTICATED", "PERMISSION_DENIED", "OK"`,
		},
		"status code twice": {
			`option (ratelimitgen.v1.limit) = {window: "60s" max: 3 count_codes: ["OK", "OK"]};`,
			`bad.proto:11:5: rpc SendCode: count_codes: "OK" is listed twice`,
		},
		"limits counting different codes": {
			"option (ratelimitgen.v1.limit) = {key: \"email\" window: \"60s\" max: 3 count_codes: [\"UNAUTHENTICATED\"]};\n    option (ratelimitgen.v1.limit) = {window: \"1s\" max: 100 name: \"all\"};",
			`bad.proto:12:5: rpc SendCode: count_codes lists none where the rpc's first limit lists UNAUTHENTICATED: every limit of an rpc counts the same calls, so list the same codes on each`,
		},
		"calendar window of two months": {
			`option (ratelimitgen.v1.limit) = {window: "2mo" max: 3};`,
			`bad.proto:11:5: rpc SendCode: window "2mo": calendar windows are one period long, from the start of one to the start of the next; write "1d", "1w", "1mo" or "1y"`,
		},
		"unknown time zone": {
			`option (ratelimitgen.v1.limit) = {window: "1mo" tz: "Europe/Berln" max: 3};`,
			`bad.proto:11:5: rpc SendCode: unknown time zone "Europe/Berln"; write an IANA time zone name, e.g. tz: "Europe/Berlin" (zone names are case-sensitive)`,
		},
		"time zone of a duration window": {
			`option (ratelimitgen.v1.limit) = {window: "24h" tz: "Europe/Berlin" max: 3};`,
			`bad.proto:11:5: rpc SendCode: tz applies only to a calendar window ("1d", "1w", "1mo" or "1y"), whose periods begin at midnight in that zone; window "24h" is a duration, the same in every zone: remove tz`,
		},
		"time zone of a wrong window": {
			`option (ratelimitgen.v1.limit) = {window: "soon" tz: "Europe/Berlin" max: 3};`,
			`bad.proto:11:5: rpc SendCode: window "soon" is not a Go duration; write e.g. "60s", "5m" or "1h30m" (units ns, us, ms, s, m, h), or a calendar window: "1d", "1w", "1mo" or "1y"`,
		},
		"time zone of a 30s window": {
			`option (ratelimitgen.v1.limit) = {window: "30s" tz: "UTC" max: 3};`,
			`bad.proto:11:5: rpc SendCode: tz applies only to a calendar window ("1d", "1w", "1mo" or "1y"), whose periods begin at midnight in that zone; window "30s" is a duration, the same in every zone: remove tz`,
		},
		"calendar window of a sliding window": {
			`option (ratelimitgen.v1.limit) = {window: "1d" max: 3 algo: "sliding-window"};`,
			`bad.proto:11:5: rpc SendCode: window "1d" is a calendar window, and calendar windows are fixed windows, counted from the start of one day to the start of the next; algo "sliding-window" has no calendar boundary: remove algo, or use a duration window`,
		},
		"burst of a calendar window": {
			`option (ratelimitgen.v1.limit) = {window: "1w" max: 3 burst: 5};`,
			`bad.proto:11:5: rpc SendCode: burst applies only to algo "token-bucket" and "gcra", whose bucket it sizes; this limit uses "fixed-window": remove burst or choose one of them`,
		},
		"second limit without a name": {
			"option (ratelimitgen.v1.limit) = {key: \"email\" window: \"60s\" max: 3};\n    option (ratelimitgen.v1.limit) = {window: \"1s\" max: 100};",
			`bad.proto:12:5: rpc SendCode: every limit of an rpc after the first needs its own name, which keeps its count apart and names it in denials; add e.g. name: "Verifier.SendCode.all"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := generate(t, plugin, badProto+"    "+c.options+"\n  }\n}\n")
			require.Error(t, err, "protoc accepted it:\n%s", out)
			assert.Equal(t, "--ratelimit_out: "+c.want+"\n", out)
		})
	}
}

// TestBadMaxIsProtocs: a max that is not a uint32 never reaches the
// plugin; protoc itself places the error.
func TestBadMaxIsProtocs(t *testing.T) {
	plugin := protoctest.Plugins(t, pluginPackage)
	out, err := generate(t, plugin, badProto+`    option (ratelimitgen.v1.limit) = {window: "60s" max: -1};`+"\n  }\n}\n")
	require.Error(t, err)
	assert.Contains(t, out, "bad.proto:11:")
	assert.Contains(t, out, `Error while parsing option value for "limit"`)
}

// TestClientStreamKey: a client-streaming rpc has no request before the
// call is admitted, so a key cannot name one of its fields.
func TestClientStreamKey(t *testing.T) {
	plugin := protoctest.Plugins(t, pluginPackage)
	src := strings.Replace(badProto, "rpc SendCode(Req)", "rpc SendCode(stream Req)", 1) +
		`    option (ratelimitgen.v1.limit) = {key: "email" window: "60s" max: 3};` + "\n  }\n}\n"
	out, err := generate(t, plugin, src)
	require.Error(t, err)
	assert.Equal(t, `--ratelimit_out: bad.proto:11:5: rpc SendCode: key "email" names a field of the request, which a client-streaming rpc receives only after the call is admitted: remove key to count every call together`+"\n", out)
}

// TestEveryErrorIsReported: the errors of several rpcs come out together.
func TestEveryErrorIsReported(t *testing.T) {
	plugin := protoctest.Plugins(t, pluginPackage)
	src := badProto + `    option (ratelimitgen.v1.limit) = {key: "emial" window: "60s" max: 3};
  }
  rpc Resend(Req) returns (Res) {
    option (ratelimitgen.v1.limit) = {key: "email" window: "1 day" max: 3};
  }
}
`
	out, err := generate(t, plugin, src)
	require.Error(t, err)
	assert.Equal(t, `--ratelimit_out: bad.proto:11:5: rpc SendCode: key "emial": bad.v1.Req has no field "emial"; its fields are email, user, tags, score, count
bad.proto:14:5: rpc Resend: window "1 day" is not a Go duration; write e.g. "60s", "5m" or "1h30m" (units ns, us, ms, s, m, h), or a calendar window: "1d", "1w", "1mo" or "1y"
`, out)
}

// TestNoInterfaceChosen: without grpc or connect the plugin says what to
// write.
func TestNoInterfaceChosen(t *testing.T) {
	plugin := protoctest.Plugins(t, pluginPackage)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.proto"), []byte(badProto+"  }\n}\n"), 0o644))
	out, err := protoctest.Run(t, dir, append(plugin, "-I", ".", "-I", optionsDir(t), "--ratelimit_out="+dir, "bad.proto")...)
	require.Error(t, err)
	assert.Contains(t, out, "say which interfaces to wrap: --ratelimit_opt=grpc")
}

// generate writes src as bad.proto and runs protoc with the plugin on it,
// for both interfaces; it checks that a failed run writes nothing.
func generate(t *testing.T, plugin []string, src string) (string, error) {
	t.Helper()
	dir, outDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.proto"), []byte(src), 0o644))
	args := append(plugin, "-I", ".", "-I", optionsDir(t), "--ratelimit_out="+outDir, "--ratelimit_opt=grpc,connect", "bad.proto")
	out, err := protoctest.Run(t, dir, args...)
	var exit *exec.ExitError
	if err != nil && assert.ErrorAs(t, err, &exit) {
		written, rerr := os.ReadDir(outDir)
		require.NoError(t, rerr)
		assert.Empty(t, written, "a failed run wrote files")
	}
	return out, err
}

// optionsDir is the import path of ratelimitgen/v1/limit.proto.
func optionsDir(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", "..", "proto"))
	require.NoError(t, err)
	return dir
}

const pluginPackage = "github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto/cmd/protoc-gen-ratelimit"

// TestCalendarWindow: a calendar window in a time zone is a FixedWindow
// runtime.Limit with a Calendar and no Window, in both interfaces'
// wrappers; without tz, the Calendar has no Zone (UTC).
func TestCalendarWindow(t *testing.T) {
	plugin := protoctest.Plugins(t, pluginPackage)
	dir, outDir := t.TempDir(), t.TempDir()
	src := badProto + `    option (ratelimitgen.v1.limit) = {key: "email" window: "1mo" tz: "Europe/Berlin" max: 1000};
    option (ratelimitgen.v1.limit) = {window: "1d" max: 50 algo: "fixed-window" name: "daily"};
  }
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.proto"), []byte(src), 0o644))
	args := append(plugin, "-I", ".", "-I", optionsDir(t), "--ratelimit_out="+outDir, "--ratelimit_opt=grpc,connect,paths=source_relative", "bad.proto")
	out, err := protoctest.Run(t, dir, args...)
	require.NoError(t, err, out)
	var files []string
	require.NoError(t, filepath.Walk(outDir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, path)
		}
		return err
	}))
	require.Len(t, files, 2)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Contains(t, string(b), `runtime.Limit{Name: "Verifier.SendCode", Max: 1000, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Month, Zone: "Europe/Berlin"}}`, f)
		assert.Contains(t, string(b), `runtime.Limit{Name: "daily", Max: 50, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Day}}`, f)
	}
}
