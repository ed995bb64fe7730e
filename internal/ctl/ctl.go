// Package ctl is the command ratelimitctl: it shows and resets the state
// that runtime/redislimit keeps in Redis for one key of one limit, and
// lists the limits a service declares, reading them from the manifest that
// `ratelimitgen -list -json` prints and the service's overrides file.
package ctl

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// Usage is the command's synopsis.
const Usage = `usage: ratelimitctl list  -manifest file.json [-overrides file.json]
       ratelimitctl show  -limit name -key key [-manifest file.json] [-overrides file.json] connection
       ratelimitctl reset -limit name -key key [-yes] [-manifest file.json] [-overrides file.json] connection

connection: -redis redis://[user[:password]@]host:6379/0 (or rediss:// for TLS)
        or  -cluster host1:6379,host2:6379 (or redis:// URLs)
        or  -sentinel-master name -sentinel host1:26379,host2:26379
        and -user name, -prefix p (the service's WithPrefix),
            -hash-secret-env NAME (the service's WithHashedKeys secret, read from $NAME)
The password comes from the URL or $` + PasswordEnv + ` ($` + SentinelPasswordEnv + ` for sentinels).
`

// A Terminal is a standard input that an operator types on: reset asks it
// for confirmation. An *os.File is one when it is a terminal device.
type Terminal interface {
	io.Reader
	IsTerminal() bool
}

// Run runs ratelimitctl with args (without the command's name), reading
// confirmations from stdin and the environment through env (os.Getenv),
// and returns the exit status: 0 on success, 1 when the command fails, 2
// on bad usage.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, Usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	quietRedis.Do(func() { redis.SetLogger(quiet{}) })
	c := command{stdin: stdin, stdout: stdout, stderr: stderr, env: env, now: time.Now}
	fs := c.flags(cmd)
	switch cmd {
	case "list", "show", "reset":
	default:
		fmt.Fprintf(stderr, "ratelimitctl: unknown command %q\n%s", cmd, Usage)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ratelimitctl %s: unexpected argument %q (flags go before, and a key with spaces goes in quotes: -key 'a b')\n", cmd, fs.Arg(0))
		return 2
	}
	var err error
	switch cmd {
	case "list":
		err = c.list()
	case "show":
		err = c.show()
	case "reset":
		err = c.reset()
	}
	if err != nil {
		var u usageError
		fmt.Fprintf(stderr, "ratelimitctl %s: %v\n", cmd, err)
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

// quietRedis silences go-redis's own log, of dial attempts and sentinel
// switches: the command reports what fails itself.
var quietRedis sync.Once

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// usageError is an error of the command line.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

type command struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            func(string) string
	now            func() time.Time

	manifest, overrides string
	limit               string
	keys                []string
	max                 int
	yes                 bool
	conn                connection
	prefix              string
	hashSecretEnv       string
	hashSecretEncoding  string
}

func (c *command) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("ratelimitctl "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprint(c.stderr, Usage+"\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.manifest, "manifest", "", "the `file` of limits that ratelimitgen -list -json prints")
	fs.StringVar(&c.overrides, "overrides", "", "the service's overrides `file`, whose values replace the manifest's")
	if name == "list" {
		return fs
	}
	fs.StringVar(&c.limit, "limit", "", "the limit's name, whole or its last parts (Notifier.SendCode)")
	fs.Func("key", "the key, as the service computes it (for a key of several parts, one -key per part, in order)", func(s string) error {
		c.keys = append(c.keys, s)
		return nil
	})
	fs.IntVar(&c.max, "max", 0, "the key's max, for a limit whose max each call computes (max=expr)")
	if name == "reset" {
		fs.BoolVar(&c.yes, "yes", false, "reset without asking for confirmation")
	}
	fs.StringVar(&c.conn.redisURL, "redis", "", "Redis `URL`: redis://[user[:password]@]host:port/db, rediss:// for TLS")
	fs.StringVar(&c.conn.cluster, "cluster", "", "Redis Cluster nodes: host:port or redis:// URLs, separated by commas")
	fs.StringVar(&c.conn.sentinelMaster, "sentinel-master", "", "the master's name, with -sentinel")
	fs.StringVar(&c.conn.sentinels, "sentinel", "", "the sentinels' addresses, host:port separated by commas")
	fs.StringVar(&c.conn.user, "user", "", "the Redis ACL user, when the URL names none")
	fs.DurationVar(&c.conn.timeout, "timeout", 5*time.Second, "how long to wait for Redis")
	fs.StringVar(&c.prefix, "prefix", "ratelimit:", "the prefix of the service's Redis keys (redislimit.WithPrefix)")
	fs.StringVar(&c.hashSecretEnv, "hash-secret-env", "", "the `NAME` of the environment variable holding the service's WithHashedKeys secret")
	fs.StringVar(&c.hashSecretEncoding, "hash-secret-encoding", "raw", "how the variable holds the secret: raw (its bytes), base64 or hex, as the service decodes it")
	return fs
}

// list prints the limits known.
func (c *command) list() error {
	limits, err := loadLimits(c.manifest, c.overrides)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tALGORITHM\tMAX\tWINDOW\tMODE\tKEY\tOVERRIDDEN")
	for _, k := range limits {
		l := k.limit
		alg, max, window, key := string(l.Algorithm), fmt.Sprint(l.Max), l.Window.String(), strings.Join(k.keyParts, ", ")
		switch {
		case !k.inManifest:
			alg = "?"
		case alg == "":
			alg = string(runtime.SlidingLog)
		}
		if l.Max == 0 {
			max = "-"
			if k.maxExpr != "" {
				max = k.maxExpr
			}
		}
		switch {
		case !l.Calendar.IsZero():
			window = l.Calendar.String()
		case l.Window == 0:
			window = "-"
		}
		if l.Algorithm == runtime.Concurrency {
			max, window = max+" in flight", "lease "+window
		}
		if l.Burst > 0 && (l.Algorithm == runtime.TokenBucket || l.Algorithm == runtime.GCRA) {
			max += fmt.Sprintf(" (burst %d)", l.Burst)
		}
		if key == "" {
			key = "-"
			if !k.inManifest {
				key = "?"
			}
		}
		over := "-"
		if k.overridden {
			over = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, alg, max, window, l.Mode, key, over)
	}
	return w.Flush()
}

// target is what show and reset work on: a limit, a key and a limiter.
type target struct {
	known
	key     string
	lim     *redislimit.Limiter
	client  redis.UniversalClient
	store   string
	hashed  bool
	prefix  string
	timeout time.Duration
}

// target resolves the flags of show and reset.
func (c *command) target() (*target, error) {
	limits, err := loadLimits(c.manifest, c.overrides)
	if err != nil {
		return nil, err
	}
	k, err := find(limits, c.limit)
	if err != nil {
		return nil, usageError{err}
	}
	l := &k.limit
	if !k.inManifest && (l.Max == 0 || l.Window == 0 && l.Calendar.IsZero()) {
		return nil, usageError{fmt.Errorf("the overrides file gives limit %s no max and window, and no manifest declares it: give -manifest file.json", l.Name)}
	}
	if c.max > 0 {
		l.Max = c.max
	}
	if l.Max == 0 {
		return nil, usageError{fmt.Errorf("limit %s computes its max for each call (max=%s): give the key's max with -max N", l.Name, k.maxExpr)}
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	t := &target{known: k, prefix: c.prefix, timeout: c.conn.timeout}
	switch {
	case len(k.keyParts) > 1 && len(c.keys) != len(k.keyParts):
		return nil, usageError{fmt.Errorf("limit %s has a key of %d parts (%s): give one -key for each, in order", l.Name, len(k.keyParts), strings.Join(k.keyParts, ", "))}
	case len(k.keyParts) == 1 && len(c.keys) > 1:
		return nil, usageError{fmt.Errorf("limit %s has a key of one part (%s): give one -key", l.Name, k.keyParts[0])}
	case len(k.keyParts) > 1 || len(c.keys) > 1:
		t.key = runtime.Key(c.keys...)
	case len(c.keys) == 1:
		if k.inManifest && len(k.keyParts) == 0 {
			return nil, usageError{fmt.Errorf("limit %s has no key: every caller shares it; leave out -key", l.Name)}
		}
		t.key = c.keys[0]
	case len(k.keyParts) > 0 || !k.inManifest:
		return nil, usageError{fmt.Errorf("give the key with -key (limit %s counts per %s)", l.Name, orUnknown(k.keyParts))}
	}
	opts := []redislimit.Option{
		redislimit.WithPrefix(c.prefix),
		// One instance, so that the command stamps nothing in Redis to
		// count the service's instances.
		redislimit.WithInstances(1),
		redislimit.WithDenyCache(0),
		redislimit.WithBatching(false),
		redislimit.WithTimeout(c.conn.timeout),
		redislimit.WithFailurePolicy(redislimit.FailClosed),
		// The errors are the command's to report, without keys.
		redislimit.WithLogger(slog.New(slog.DiscardHandler)),
	}
	if c.hashSecretEnv != "" {
		secret, err := c.hashSecret()
		if err != nil {
			return nil, err
		}
		if len(secret) < 32 {
			return nil, fmt.Errorf("-hash-secret-env %s: the secret holds %d bytes; WithHashedKeys takes at least 32, so it is not the service's", c.hashSecretEnv, len(secret))
		}
		opts = append(opts, redislimit.WithHashedKeys(secret))
		t.hashed = true
	}
	client, store, err := c.conn.client(c.env)
	if err != nil {
		return nil, usageError{err}
	}
	t.client, t.store, t.lim = client, store, redislimit.New(client, opts...)
	return t, nil
}

// hashSecret reads the secret of WithHashedKeys from the environment
// variable -hash-secret-env names, decoded as -hash-secret-encoding says.
// Its errors never hold the secret.
func (c *command) hashSecret() ([]byte, error) {
	v := c.env(c.hashSecretEnv)
	if v == "" {
		return nil, fmt.Errorf("-hash-secret-env %s: the environment variable %s is empty or unset; set it to the service's WithHashedKeys secret", c.hashSecretEnv, c.hashSecretEnv)
	}
	var (
		secret []byte
		err    error
	)
	switch c.hashSecretEncoding {
	case "raw":
		return []byte(v), nil
	case "base64":
		secret, err = base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	case "hex":
		secret, err = hex.DecodeString(strings.TrimSpace(v))
	default:
		return nil, usageError{fmt.Errorf("-hash-secret-encoding %q: use raw, base64 or hex", c.hashSecretEncoding)}
	}
	if err != nil {
		return nil, fmt.Errorf("-hash-secret-env %s: the variable does not hold %s", c.hashSecretEnv, c.hashSecretEncoding)
	}
	return secret, nil
}

func orUnknown(parts []string) string {
	if len(parts) == 0 {
		return "a key the manifest does not give"
	}
	return strings.Join(parts, ", ")
}

// request is the target as a request to peek at or reset: always
// enforced, so that a limit in shadow mode or off shows what Redis holds.
func (t *target) request() runtime.Request {
	l := t.limit
	l.Mode = runtime.ModeEnforce
	return runtime.Request{Limit: l, Key: t.key}
}

func (t *target) peek() (runtime.Decision, error) {
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	ds, err := runtime.Peek(ctx, t.lim, t.request())
	if err != nil {
		return runtime.Decision{}, t.storeError("read", err)
	}
	return ds.Each[0], nil
}

// storeError explains err, from asking Redis to op the key's state; it
// names the limit, never the key.
func (t *target) storeError(op string, err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		switch {
		case strings.HasPrefix(msg, "WRONGPASS"):
			return fmt.Errorf("%s refused the user and password: %v", t.store, msg)
		case strings.HasPrefix(msg, "NOPERM"), strings.Contains(msg, "can't run this command"), strings.Contains(msg, "no permissions"):
			return fmt.Errorf("%s refused to %s the state of limit %s: %v (the ACL user needs the commands and keys of docs/redis.md's ACL line, on prefix %q)", t.store, op, t.limit.Name, msg, t.prefix)
		}
		return fmt.Errorf("%s failed to %s the state of limit %s: %v", t.store, op, t.limit.Name, msg)
	}
	if errors.Is(err, runtime.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		cause := err
		if u := errors.Unwrap(err); u != nil {
			cause = u
		}
		return fmt.Errorf("cannot reach %s: %v", t.store, cause)
	}
	return fmt.Errorf("cannot %s the state of limit %s in %s: %v", op, t.limit.Name, t.store, err)
}

// capacity is the most units the key can have: the permits of a
// concurrency limit, Limit.Capacity for the others.
func (t *target) capacity() int {
	if t.limit.Algorithm == runtime.Concurrency {
		return t.limit.Max
	}
	return t.limit.Capacity()
}

func (t *target) close() { _ = t.client.Close() }

// show prints the key's state.
func (c *command) show() error {
	t, err := c.target()
	if err != nil {
		return err
	}
	defer t.close()
	d, err := t.peek()
	if err != nil {
		return err
	}
	c.printState(t, d)
	return nil
}

// printState prints d, the key's state, for t.
func (c *command) printState(t *target, d runtime.Decision) {
	now := c.now().UTC()
	l := t.limit
	w := tabwriter.NewWriter(c.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintf(w, "limit\t%s\n", l.Name)
	fmt.Fprintf(w, "policy\t%s\n", policy(t.known))
	if t.key != "" {
		fmt.Fprintf(w, "key\t%s\n", strings.Join(c.keys, ", "))
	} else {
		fmt.Fprintf(w, "key\t(none: every caller shares the limit)\n")
	}
	capacity := t.capacity()
	if l.Algorithm == runtime.Concurrency {
		fmt.Fprintf(w, "in use\t%d of %d permits (%d free)\n", capacity-d.Remaining, capacity, d.Remaining)
	} else {
		fmt.Fprintf(w, "remaining\t%d of %d\n", d.Remaining, capacity)
	}
	switch {
	case d.Allowed:
		fmt.Fprintf(w, "now\tallowed: a call of cost 1 would be admitted\n")
	case l.Algorithm == runtime.Concurrency:
		fmt.Fprintf(w, "now\tdenied: every permit is in use; one frees when a call ends or its lease does\n")
	default:
		fmt.Fprintf(w, "now\tdenied: retry after %s, at %s\n", dur(d.RetryAfter), stamp(now.Add(d.RetryAfter)))
	}
	if d.ResetAfter > 0 {
		what := fmt.Sprintf("all %d available again", capacity)
		if l.Algorithm == runtime.Concurrency {
			what = "when the last lease ends, if no call renews it"
		}
		fmt.Fprintf(w, "resets\tin %s, at %s (%s)\n", dur(d.ResetAfter), stamp(now.Add(d.ResetAfter)), what)
	} else {
		fmt.Fprintf(w, "resets\tnow: Redis holds nothing for this key\n")
	}
	switch l.Mode {
	case runtime.ModeShadow:
		fmt.Fprintf(w, "mode\tshadow: the service counts the key but admits its calls when it would deny them\n")
	case runtime.ModeOff:
		fmt.Fprintf(w, "mode\toff: the service neither counts nor limits the key\n")
	}
	store := t.store
	if t.hashed {
		store += ", keys hashed"
	}
	fmt.Fprintf(w, "store\t%s, prefix %q\n", store, c.prefix)
	fmt.Fprintf(w, "not shown\tthe service's processes may also deny the key from their deny caches (until the RetryAfter they were told),\n")
	fmt.Fprintf(w, "\tand with WithLeases hold units of it in leases (counted above as used): neither lives in Redis\n")
	w.Flush()
}

// policy describes the limit's values and where they come from.
func policy(k known) string {
	l := k.limit
	alg := l.Algorithm
	if alg == "" {
		alg = runtime.SlidingLog
	}
	var s string
	if alg == runtime.Concurrency {
		s = fmt.Sprintf("%d in flight, lease %v, %s", l.Max, l.Window, alg)
	} else if !l.Calendar.IsZero() {
		s = fmt.Sprintf("%d per %v, %s", l.Max, l.Calendar, alg)
	} else {
		s = fmt.Sprintf("%d per %v, %s", l.Max, l.Window, alg)
		if l.Burst > 0 && (alg == runtime.TokenBucket || alg == runtime.GCRA) {
			s += fmt.Sprintf(", burst %d", l.Burst)
		}
	}
	s += ", " + l.Mode.String()
	var from []string
	if k.overridden {
		from = append(from, "overridden by the overrides file")
	}
	if k.maxExpr != "" && k.declared.Max == 0 {
		from = append(from, "max= "+k.maxExpr+" computed per call")
	}
	if !k.inManifest {
		from = append(from, "algorithm assumed: no manifest declares the limit")
	}
	if len(from) > 0 {
		s += " (" + strings.Join(from, "; ") + ")"
	}
	return s
}

// reset resets the key, after confirmation.
func (c *command) reset() error {
	t, err := c.target()
	if err != nil {
		return err
	}
	defer t.close()
	before, err := t.peek()
	if err != nil {
		return err
	}
	if !c.yes {
		if err := c.confirm(t, before); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	if err := runtime.Reset(ctx, t.lim, t.request()); err != nil {
		return t.storeError("reset", err)
	}
	after, err := t.peek()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "reset %s for key %s: %d of %d remaining before, %d now\n", t.limit.Name, strings.Join(c.keys, ", "), before.Remaining, t.capacity(), after.Remaining)
	if !before.Allowed {
		fmt.Fprintf(c.stdout, "the service's deny caches may still deny the key for up to %s (its last retry-after); leases end within 10 lease periods\n", dur(before.RetryAfter))
	}
	return nil
}

// confirm asks the operator on a terminal to confirm the reset.
func (c *command) confirm(t *target, before runtime.Decision) error {
	if !isTerminal(c.stdin) {
		return usageError{errors.New("refusing to reset without -yes: standard input is not a terminal to confirm on")}
	}
	fmt.Fprintf(c.stderr, "Reset limit %s for key %s (%d of %d remaining) in %s? [y/N] ", t.limit.Name, strings.Join(c.keys, ", "), before.Remaining, t.capacity(), t.store)
	line, err := bufio.NewReader(c.stdin).ReadString('\n')
	if err != nil && line == "" {
		return errors.New("not reset: no answer")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errors.New("not reset")
}

func isTerminal(r io.Reader) bool {
	switch r := r.(type) {
	case Terminal:
		return r.IsTerminal()
	case *os.File:
		if terminal, known := isTerminalFd(r.Fd()); known {
			return terminal
		}
		fi, err := r.Stat()
		return err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
	return false
}

// dur rounds d for reading: to the millisecond under a minute, to the
// second above.
func dur(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func stamp(t time.Time) string { return t.Format("2006-01-02 15:04:05.000 MST") }
