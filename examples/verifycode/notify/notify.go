// Package notify sends one-time verification codes by e-mail and checks
// them. It is the service layer of the verifycode example: it knows nothing
// about HTTP, and its rate limits are declared on the CodeService interface
// and enforced by the generated RateLimitedCodeService (ratelimit_gen.go).
package notify

//go:generate go tool ratelimitgen

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
)

// CodeService sends verification codes and checks them. Callers should
// depend on this interface and be given a RateLimitedCodeService, so that no
// caller can reach the unlimited implementation by accident.
//
// The limits carry a name= because their names are public: clients see
// them in the RateLimit-Policy header and in 429 bodies. Without it a
// limit is named after the method's full import path, which is unique in
// a program but long.
type CodeService interface {
	// SendCode e-mails a fresh code to req.Email, replacing any earlier
	// one. The limit protects the recipient's mailbox (and the sender's
	// reputation) from being flooded, whoever asks.
	//
	//ratelimit:key=NormalizeEmail(req.Email) window=60s max=3 name=CodeService.SendCode
	SendCode(ctx context.Context, req SendCodeRequest) error

	// VerifyCode checks req.Code against the last code sent to req.Email.
	// A 6-digit code has a million values, so 5 wrong guesses per 10
	// minutes make guessing hopeless. Only wrong codes count: a right one
	// gives its unit back, so that a customer who mistypes once is not
	// locked out by checking codes that work.
	//
	//ratelimit:key=NormalizeEmail(req.Email) window=10m max=5 name=CodeService.VerifyCode refund=!errors.Is(err, ErrWrongCode)
	VerifyCode(ctx context.Context, req VerifyCodeRequest) error
}

// SendCodeRequest asks for a code to be sent.
type SendCodeRequest struct {
	Email string `json:"email"`
}

// Validate reports whether the request can be served. Call it before the
// rate-limited call, so that malformed requests spend no one's quota.
func (r SendCodeRequest) Validate() error { return validateEmail(r.Email) }

// VerifyCodeRequest submits a code for checking.
type VerifyCodeRequest struct {
	Email string `json:"email"`
	Code  string `json:"code"`
}

// Validate reports whether the request can be served; see
// SendCodeRequest.Validate.
func (r VerifyCodeRequest) Validate() error {
	if err := validateEmail(r.Email); err != nil {
		return err
	}
	if r.Code == "" {
		return fmt.Errorf("%w: the code is missing", ErrInvalidRequest)
	}
	return nil
}

// ErrInvalidRequest is wrapped by the errors of Validate: the caller sent
// something that no retry will fix.
var ErrInvalidRequest = errors.New("invalid request")

// ErrWrongCode means the code does not match the last one sent to the
// address, or it expired, or none was sent. The three cases are not told
// apart, so that an attacker learns nothing about an address.
var ErrWrongCode = errors.New("the code is wrong or has expired")

// NormalizeEmail is the form of an address that rate limits and stored
// codes are keyed on. Without it "Alice@Example.com" and "alice@example.com"
// would have separate quotas for the same mailbox.
func NormalizeEmail(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}

// validateEmail accepts a bare address such as alice@example.com, and not
// "Alice <alice@example.com>", whose display name would end up in keys.
func validateEmail(email string) error {
	email = strings.TrimSpace(email)
	if email == "" {
		return fmt.Errorf("%w: the e-mail address is missing", ErrInvalidRequest)
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email {
		return fmt.Errorf("%w: %q is not an e-mail address such as alice@example.com", ErrInvalidRequest, email)
	}
	return nil
}
