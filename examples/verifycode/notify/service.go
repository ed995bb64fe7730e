package notify

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// Mailer delivers a code to an address. Production code implements it with
// an SMTP or e-mail API client; the example uses an in-memory outbox.
type Mailer interface {
	// MailCode sends code to the address to, which is normalised.
	MailCode(ctx context.Context, to, code string) error
}

// CodeTTL is how long a code stays valid after it is sent.
const CodeTTL = 10 * time.Minute

// Service is the plain implementation of CodeService, with no rate limits:
// wrap it with NewRateLimitedCodeService before handing it to callers.
// Codes live in memory; a multi-instance deployment would keep them in a
// shared store, as it keeps the rate limits in Redis.
type Service struct {
	mailer Mailer

	mu    sync.Mutex
	codes map[string]pending // by NormalizeEmail
}

type pending struct {
	code    string
	expires time.Time
}

// NewService returns a Service that sends codes through m.
func NewService(m Mailer) *Service {
	return &Service{mailer: m, codes: make(map[string]pending)}
}

// SendCode implements CodeService.
func (s *Service) SendCode(ctx context.Context, req SendCodeRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	code, err := newCode()
	if err != nil {
		return err
	}
	addr := NormalizeEmail(req.Email)
	if err := s.mailer.MailCode(ctx, addr, code); err != nil {
		return fmt.Errorf("mailing the code: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[addr] = pending{code: code, expires: time.Now().Add(CodeTTL)}
	return nil
}

// VerifyCode implements CodeService. A code can be used once.
func (s *Service) VerifyCode(_ context.Context, req VerifyCodeRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	addr := NormalizeEmail(req.Email)
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.codes[addr]
	// Constant-time comparison, so that response times do not reveal how
	// many leading digits of a guess were right.
	if !ok || time.Now().After(p.expires) || subtle.ConstantTimeCompare([]byte(p.code), []byte(req.Code)) != 1 {
		return ErrWrongCode
	}
	delete(s.codes, addr)
	return nil
}

// newCode returns a random 6-digit code from crypto/rand: codes from a
// predictable generator could be guessed without any attempts at all.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", fmt.Errorf("generating a code: %w", err)
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}
