package runtime

import "fmt"

// Mode says whether a Limit's denials are enforced. The zero value is
// ModeEnforce. Every Limiter's Decide applies modes (see Limiter); an
// override (WithOverrides) may change a limit's mode at run time.
type Mode uint8

const (
	// ModeEnforce denies a call when the limit has no room.
	ModeEnforce Mode = iota
	// ModeShadow decides the limit as usual but never denies: the limit's
	// Decision says whether it had room, and it records the admitted calls
	// it had room for, the calls it would have admitted if enforced.
	// Observers report its calls without room as shadow-limited. Use it to
	// roll out a new limit, or a lower Max, and watch what it would deny.
	ModeShadow
	// ModeOff skips the limit: it is neither consulted nor recorded, and its
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
