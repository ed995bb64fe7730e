// Package hidden has an exported interface whose method uses an
// unexported type.
package hidden

type secret struct{}

// Getter cannot be implemented outside this package's view of secret.
type Getter interface {
	Get() (secret, error)
}
