package redislimit

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// What Redis's errors say about Redis: classify is the one place where
// they are told apart (one key's, the whole server's, or a refusal by the
// server's configuration), and refusals are read into messages that name
// what an operator must fix. The breaker that acts on them is health.go's.

// ErrPermission is matched (errors.Is) by the error of a call that Redis
// refused for its configuration rather than for a key's data: the user's
// ACL lacks a command or the limiter's key pattern, a command is renamed
// away (rename-command), or the credentials or the TLS certificates are
// refused (under TLS 1.3 a client may see a refused certificate as a reset
// connection, which Check tells apart). It is in DegradedEvent.Err and
// Decisions.Cause (so in runtime.Event.Err) of every decision while the
// refusal lasts, and in Check's error. Such a refusal opens the breaker,
// as an error about the whole server does, and is logged at Error, naming
// what is missing, once per cause and then at most once a minute. Its
// message holds no limit key.
var ErrPermission = errors.New("ratelimit: redis refuses the limiter")

// errKind is what an error says about Redis.
type errKind uint8

const (
	// errServer: Redis cannot decide for any key now (connection,
	// OOM, LOADING, a timeout, anything unknown).
	errServer errKind = iota
	// errKey: one key or one script call failed; other keys may decide.
	errKey
	// errRefusal: the server's configuration refuses the limiter, for
	// every key, until an operator changes it.
	errRefusal
)

// classify says what err, from a round trip to Redis, is about. It is the
// one place where Redis's errors are told apart.
func classify(err error) errKind {
	if refusalOf(err, "") != nil {
		return errRefusal
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return errServer
	}
	msg := rerr.Error()
	for _, code := range serverWideErrors {
		if strings.Contains(msg, code) {
			return errServer
		}
	}
	if strings.HasPrefix(msg, "WRONGTYPE") || isScriptError(msg) {
		return errKey
	}
	return errServer
}

// tripsBreaker reports whether err suggests Redis itself cannot decide, as
// opposed to a problem with one key or one script (a key of another type,
// say), which should not send every other key to the fallback. Only those
// are spared; refusals (see ErrPermission), connection, protocol, OOM,
// LOADING, READONLY and CLUSTERDOWN errors, timeouts and anything unknown
// trip the breaker.
func tripsBreaker(err error) bool { return classify(err) != errKey }

// serverWideErrors are the error codes that concern the server rather than
// a key. Redis 6 wraps a failing command inside a script as
// "ERR Error running script ...: -OOM ...", so they are matched anywhere in
// the message.
var serverWideErrors = []string{
	"OOM ", "LOADING ", "READONLY ", "CLUSTERDOWN ", "MASTERDOWN ",
	"BUSY ", "MISCONF ", "NOREPLICAS ", "TRYAGAIN ", "unauthenticated",
}

// isScriptError reports whether msg is an error raised while the script ran
// (by Redis 6 or 7, or by the script itself), not a refusal to run it.
func isScriptError(msg string) bool {
	return strings.HasPrefix(msg, "ERR") &&
		(strings.Contains(msg, "user_script") || strings.Contains(msg, "Error running script") ||
			strings.HasPrefix(msg, "ERR ratelimit:"))
}

// isRedisError reports whether err is an error reply of Redis's.
func isRedisError(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// configRefused reports whether err is the server refusing CONFIG GET to
// this client for good: an ACL without the command, or the command renamed
// away, as managed Redis services do.
func configRefused(err error) bool {
	ref := refusalOf(err, "")
	return ref != nil && strings.HasPrefix(ref.missing, "command ")
}

// refusalError is a refusal by the server's configuration (see
// ErrPermission).
type refusalError struct {
	// missing names what the server refuses, such as "command TIME" or
	// "key pattern ~ratelimit:*": the log's attribute, and the cause by
	// which logs are spaced.
	missing string
	msg     string
	// err is what Redis or the connection said, with no key in it.
	err error
}

func (e *refusalError) Error() string { return e.msg }

func (e *refusalError) Unwrap() error { return e.err }

func (e *refusalError) Is(target error) bool { return target == ErrPermission }

// The parts of Redis's refusals that name what is refused. Redis 6 and 7.0
// say "this user has no permissions to run the 'x' command" outside
// scripts and "can't run this command" inside them; Redis 7.2 and later,
// and Valkey, say "User u has no permissions to run the 'x' command" in
// both, after "ACL failure in script: " inside a script.
var (
	reRunCommand     = regexp.MustCompile(`permissions to run the '([^']+)' command`)
	reUnknownCommand = regexp.MustCompile("(?i)unknown command ['`]([^'`]*)['`]")
	reScriptLine     = regexp.MustCompile(`(?:script: |f_)([0-9a-f]{40})\b.*?@user_script: ?(\d+)`)
	reCallCommand    = regexp.MustCompile(`call\('([A-Za-z]+)'`)
)

// refusalOf returns err as a refusal by the server's configuration, or nil
// when it is none. prefix is the limiter's key prefix, which a refused key
// pattern names.
func refusalOf(err error, prefix string) *refusalError {
	if err == nil {
		return nil
	}
	var ref *refusalError
	if errors.As(err, &ref) {
		return ref
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return tlsRefusal(err)
	}
	return readRefusal(rerr.Error(), prefix, "", err)
}

// readRefusal reads msg, an error reply of Redis's or Valkey's, as a
// refusal by the server's configuration, or returns nil when it is none:
// the one reading of refusals, for decisions and Check alike. called names
// the command that got msg inside a script when the caller knows it
// (Check's probe); otherwise a refusal inside one of the limiter's scripts
// that names no command is traced to the command on the line it names.
// err is the reply as received; only its first line is kept of a refusal
// inside a script or of an unknown command, whose reply may quote
// arguments.
func readRefusal(msg, prefix, called string, err error) *refusalError {
	inScript := called != "" || strings.Contains(msg, "user_script") ||
		strings.Contains(msg, "Error running script") || strings.Contains(msg, "ACL failure in script")
	unknownInScript := strings.Contains(msg, "Unknown Redis command called from script") ||
		strings.Contains(msg, "Unknown command called from script")
	switch {
	case strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "WRONGPASS"):
		return &refusalError{missing: "credentials", err: err, msg: "ratelimit: redis refuses the limiter's credentials (" + msg +
			"): give the client the username and password of a user that Redis knows and that is on" + meanwhile}
	case strings.Contains(msg, "permissions to access") || strings.Contains(msg, "can't access at least one of the keys"):
		pattern := "~" + prefix + "*"
		return &refusalError{missing: "key pattern " + pattern, err: refusedReply(firstLine(msg)), msg: "ratelimit: redis refuses the limiter's user its keys: add the key pattern " +
			pattern + " to the user's ACL (every key begins with the limiter's prefix; docs/redis.md gives the whole ACL)" + meanwhile}
	case inScript && (strings.Contains(msg, "can't run this command") || unknownInScript || reRunCommand.MatchString(msg)):
		name, found := called, called != ""
		if m := reRunCommand.FindStringSubmatch(msg); !found && m != nil {
			name, found = m[1], true
		}
		if !found {
			name, found = scriptCommand(msg)
		}
		return commandRefusal(name, found, unknownInScript, true, refusedReply(firstLine(msg)))
	case reRunCommand.MatchString(msg):
		return commandRefusal(reRunCommand.FindStringSubmatch(msg)[1], true, false, false, err)
	case reUnknownCommand.MatchString(msg):
		// The reply goes on with the command's first arguments, which may
		// hold a key: they are left out.
		name := reUnknownCommand.FindStringSubmatch(msg)[1]
		return commandRefusal(name, true, true, false, refusedReply("ERR unknown command '"+name+"'"))
	case strings.HasPrefix(msg, "NOPERM"):
		return commandRefusal("", false, false, false, err)
	}
	return nil
}

// commandRefusal is the refusal of the command name (found false: of one
// that the message does not name), which the server does not know
// (unknown) or the user may not run, inside a script or not.
func commandRefusal(name string, found, unknown, inScript bool, err error) *refusalError {
	shown := strings.ToUpper(strings.ReplaceAll(name, "|", " "))
	what := "the command " + shown
	if !found {
		shown, what = "unnamed", "a command"
	}
	if inScript {
		what += ", which its scripts call"
	}
	var msg string
	switch {
	case unknown:
		msg = "ratelimit: redis does not know " + what + ": it is renamed or disabled (rename-command), and the limiter needs it under its own name"
	case found:
		msg = "ratelimit: redis refuses the limiter's user " + what + ": add +" + strings.ToLower(name) + " to the user's ACL (docs/redis.md gives the whole ACL)"
	default:
		msg = "ratelimit: redis refuses the limiter's user " + what + " (docs/redis.md gives the whole ACL)"
	}
	if !found {
		msg += "; Limiter.Check names it"
	}
	return &refusalError{missing: "command " + shown, msg: msg + meanwhile, err: err}
}

// meanwhile ends every refusal's message.
const meanwhile = "; meanwhile decisions follow the failure policy"

// scriptCommand returns the command on the line of the limiter's script
// that a refusal inside a script names (by the script's SHA-1 and line), if
// it is one of the limiter's scripts.
func scriptCommand(msg string) (string, bool) {
	m := reScriptLine.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	src, ok := scriptSources()[m[1]]
	if !ok {
		return "", false
	}
	n, _ := strconv.Atoi(m[2])
	lines := strings.Split(src, "\n")
	if n < 1 || n > len(lines) {
		return "", false
	}
	c := reCallCommand.FindStringSubmatch(lines[n-1])
	if c == nil {
		return "", false
	}
	return c[1], true
}

// scriptSources holds the source of each of the limiter's scripts by its
// SHA-1.
var scriptSources = sync.OnceValue(func() map[string]string {
	m := map[string]string{mixedScript.Hash(): mixedScript.src.(string), instanceScript.Hash(): instanceSrc}
	for _, s := range codeScripts {
		if s != nil {
			m[s.Hash()] = s.src.(string)
		}
	}
	return m
})

// tlsRefusal returns err as a refusal when it is a TLS handshake that
// failed for the certificates: the server's alert (no client certificate,
// or one it does not trust) or the client not trusting the server's.
func tlsRefusal(err error) *refusalError {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" && strings.HasPrefix(op.Err.Error(), "tls:") {
		return &refusalError{missing: "TLS client certificate", err: err, msg: "ratelimit: redis refused the TLS handshake (" + op.Err.Error() +
			"): give the client (redis.Options.TLSConfig.Certificates) a certificate signed by a CA in the server's tls-ca-cert-file" + meanwhile}
	}
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) {
		return &refusalError{missing: "TLS server certificate", err: err, msg: "ratelimit: the client does not trust redis's TLS certificate (" + err.Error() +
			"): add its CA to redis.Options.TLSConfig.RootCAs, and connect by a name or address the certificate holds" + meanwhile}
	}
	return nil
}

// firstLine returns msg up to its first line break.
func firstLine(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	return line
}

// refusedReply is a Redis error reply with its arguments cut off; it stays
// a redis.Error.
type refusedReply string

func (e refusedReply) Error() string { return string(e) }

func (refusedReply) RedisError() {}

// refusalLogEvery spaces the logs of one refusal: an operator must see it,
// but not once per call.
const refusalLogEvery = unknownShareLogEvery

// refusalLog spaces the logs of each cause of refusal.
type refusalLog struct {
	mu sync.Mutex
	// last is when (mono) each cause was last logged.
	last map[string]int64
}

// due reports whether cause may be logged at now (mono), and if so counts
// it as logged.
func (l *refusalLog) due(cause string, now int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.last[cause]; ok && now-last < int64(refusalLogEvery) {
		return false
	}
	if l.last == nil || len(l.last) >= 64 {
		// The causes are the commands the limiter sends and a few more;
		// a bound all the same.
		l.last = map[string]int64{}
	}
	l.last[cause] = now
	return true
}

// refused returns err as a refusal (see ErrPermission), logged if it is
// due, or err itself when it is none. attrs say what was refused, such as
// the limit being decided, for the log.
func (r *Limiter) refused(err error, attrs ...slog.Attr) error {
	ref := refusalOf(err, r.cfg.prefix)
	if ref == nil {
		return err
	}
	if r.refusals.due(ref.missing, mono()) {
		args := []any{slog.String("missing", ref.missing)}
		for _, a := range attrs {
			args = append(args, a)
		}
		r.logger().Error(ref.msg, args...)
	}
	return ref
}

// isRefused reports whether err is a connection that could not be made,
// other than for want of time.
func isRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && !errors.Is(err, context.DeadlineExceeded)
}

// isTimeout reports whether err is a read or write that timed out.
func isTimeout(err error) bool {
	var nerr net.Error
	return errors.As(err, &nerr) && nerr.Timeout()
}

// isNoScript reports whether err is Redis not knowing the script.
func isNoScript(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && len(rerr.Error()) >= 8 && rerr.Error()[:8] == "NOSCRIPT"
}

// refusesSpread reports whether stop, the error that stopped a spread
// batch (see evalSpread), is a node refusing a script access to a key of a
// slot other than the first it touched: Redis does for a script that
// declares flags without allow-cross-slot-keys, and may for every script.
func refusesSpread(stop string) bool {
	return strings.Contains(stop, "hash to the same slot")
}
