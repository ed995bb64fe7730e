package runtime

import "fmt"

// Mode says whether a Limit's denials are enforced. The zero value is
// ModeEnforce.
//
// Modes are applied by Decide, and so by Enforce, Wait and Operate, which
// generated wrappers and ratelimithttp call. A Limiter's own Decide method
// enforces every limit it is given: it never sees a shadow or disabled limit
// when called through them.
type Mode uint8

const (
	// ModeEnforce denies a call when the limit has no room.
	ModeEnforce Mode = iota
	// ModeShadow decides and records the limit as usual, but a call it
	// would deny goes through; the limit's Decision says it had no room
	// (Allowed false) while Decisions.Allowed is true, so observers report
	// it as shadow-limited. Use it to roll out a new limit, or a lower Max,
	// and watch what it would deny before it bites.
	ModeShadow
	// ModeOff skips the limit: it is neither asked nor recorded, and its
	// Decision admits with Remaining equal to its capacity.
	ModeOff
)

// String returns "enforce", "shadow" or "off", the names directives and
// override files use.
func (m Mode) String() string {
	switch m {
	case ModeEnforce:
		return "enforce"
	case ModeShadow:
		return "shadow"
	case ModeOff:
		return "off"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// GoString returns m in Go syntax, such as runtime.ModeShadow, so that %#v
// prints a Limit as code.
func (m Mode) GoString() string {
	switch m {
	case ModeEnforce:
		return "runtime.ModeEnforce"
	case ModeShadow:
		return "runtime.ModeShadow"
	case ModeOff:
		return "runtime.ModeOff"
	}
	return fmt.Sprintf("runtime.Mode(%d)", uint8(m))
}

// MarshalText implements encoding.TextMarshaler, so that a Mode reads as its
// name in JSON.
func (m Mode) MarshalText() ([]byte, error) {
	if m > ModeOff {
		return nil, fmt.Errorf("ratelimit: unknown mode %d", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler: it accepts "enforce",
// "shadow" and "off".
func (m *Mode) UnmarshalText(b []byte) error {
	for v := ModeEnforce; v <= ModeOff; v++ {
		if string(b) == v.String() {
			*m = v
			return nil
		}
	}
	return fmt.Errorf("ratelimit: unknown mode %q; use enforce, shadow or off", b)
}
