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

type tenantKey struct{}

// TenantOf returns the tenant of ctx.
func TenantOf(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}

// Tenanted counts every call per tenant, with a type-level directive.
//
//ratelimit:key=TenantOf(ctx) window=1m max=10
type Tenanted interface {
	Do(ctx context.Context) error
}
