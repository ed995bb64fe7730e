// Package concrete has directives on methods with pointer receivers: the
// wrapper embeds *Mailer, so the other methods, and those Mailer promotes
// from its own embedded fields, pass through.
package concrete

import "context"

// Base is embedded in Mailer.
type Base struct{}

// Ping is promoted through Mailer and the wrapper.
func (b *Base) Ping() error { return nil }

// Mailer sends mail.
type Mailer struct {
	*Base
	sent int
}

// Send sends one message.
//
//ratelimit:key=to window=1h max=100
func (m *Mailer) Send(ctx context.Context, to string, body []byte) error {
	m.sent++
	return nil
}

// Count has a value receiver but the type still has pointer ones.
//
//ratelimit:window=1s max=10
func (m Mailer) Count() (int, error) { return m.sent, nil }

// Reset is not rate-limited.
func (m *Mailer) Reset() { m.sent = 0 }
