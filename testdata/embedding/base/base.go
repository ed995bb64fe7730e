// Package base declares limited methods that package embedding gets by
// embedding.
package base

import (
	"context"
	"strings"
)

// Normalize is what Service's limit keys on.
func Normalize(id string) string { return strings.ToLower(id) }

// Service is a concrete type with a limited method.
type Service struct{}

// Get is limited here and wherever Service is embedded.
//
//ratelimit:key=Normalize(id) window=1m max=2
func (s *Service) Get(ctx context.Context, id string) error { return nil }

// Store is an interface with a limited method.
type Store interface {
	//ratelimit:key=id window=1m max=3
	Load(ctx context.Context, id string) ([]byte, error)
}
