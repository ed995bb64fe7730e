// Package valuerecv has a type whose methods all have value receivers: the
// wrapper embeds Geo itself and its constructor takes a Geo.
package valuerecv

// Geo looks places up.
type Geo struct {
	Region string
}

// Lookup finds a place.
//
//ratelimit:key=name window=500ms max=2
func (g Geo) Lookup(name string) (lat, lng float64, err error) { return 0, 0, nil }

// Zone is not rate-limited.
func (g Geo) Zone() string { return g.Region }
