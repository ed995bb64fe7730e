package generate

import (
	"testing"
	"time"
)

func TestWindowUnit(t *testing.T) {
	cases := []struct {
		d     time.Duration
		n     int64
		unit  string
		words string
	}{
		{time.Minute, 1, "Minute", "per minute"},
		{60 * time.Second, 1, "Minute", "per minute"},
		{90 * time.Second, 90, "Second", "per 90 seconds"},
		{2 * time.Hour, 2, "Hour", "per 2 hours"},
		{1500 * time.Millisecond, 1500, "Millisecond", "per 1500 milliseconds"},
		{250 * time.Microsecond, 250, "Microsecond", "per 250 microseconds"},
		{7, 7, "Nanosecond", "per 7 nanoseconds"},
	}
	for _, c := range cases {
		n, i := windowUnit(c.d)
		if n != c.n || durationUnits[i].name != c.unit {
			t.Errorf("windowUnit(%v) = %d %s, want %d %s", c.d, n, durationUnits[i].name, c.n, c.unit)
		}
		if w := windowWords(c.d); w != c.words {
			t.Errorf("windowWords(%v) = %q, want %q", c.d, w, c.words)
		}
	}
}
