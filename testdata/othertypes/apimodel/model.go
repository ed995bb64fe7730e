// Package model is imported by othertypes; its directory is apimodel, so
// the generated file must name it explicitly.
package model

import "strings"

// User is an account.
type User struct {
	ID    int64
	Email string
}

// Request is an API request.
type Request struct {
	User User
	Tags []string
}

// Response is an API response.
type Response struct{}

// Normalize canonicalises an e-mail address.
func Normalize(email string) string { return strings.ToLower(email) }
