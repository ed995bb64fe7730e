package notify_test

import (
	"context"
	"errors"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/examples/verifycode/notify"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// mailbox is a notify.Mailer that remembers every mail.
type mailbox struct{ sent []mail }

type mail struct{ to, code string }

func (m *mailbox) MailCode(_ context.Context, to, code string) error {
	m.sent = append(m.sent, mail{to, code})
	return nil
}

func TestNormalizeEmail(t *testing.T) {
	assert.Equal(t, "alice@example.com", notify.NormalizeEmail(" Alice@Example.COM\t"))
	assert.Equal(t, "bob@example.com", notify.NormalizeEmail("bob@example.com"))
}

func TestValidate(t *testing.T) {
	for _, email := range []string{"", "   ", "alice", "alice@", "Alice <alice@example.com>", "a@example.com, b@example.com"} {
		err := notify.SendCodeRequest{Email: email}.Validate()
		assert.ErrorIs(t, err, notify.ErrInvalidRequest, "email %q", email)
	}
	assert.NoError(t, notify.SendCodeRequest{Email: " alice@example.com "}.Validate())
	assert.ErrorIs(t, notify.VerifyCodeRequest{Email: "alice@example.com"}.Validate(), notify.ErrInvalidRequest)
	assert.NoError(t, notify.VerifyCodeRequest{Email: "alice@example.com", Code: "123456"}.Validate())
}

func TestServiceSendsAndVerifiesCodes(t *testing.T) {
	ctx := context.Background()
	box := &mailbox{}
	svc := notify.NewService(box)

	require.NoError(t, svc.SendCode(ctx, notify.SendCodeRequest{Email: "Alice@Example.com"}))
	require.Len(t, box.sent, 1)
	assert.Equal(t, "alice@example.com", box.sent[0].to, "codes go to the normalised address")
	assert.Regexp(t, regexp.MustCompile(`^[0-9]{6}$`), box.sent[0].code)
	code := box.sent[0].code

	wrong := "x" + code[1:]
	assert.ErrorIs(t, svc.VerifyCode(ctx, notify.VerifyCodeRequest{Email: "alice@example.com", Code: wrong}), notify.ErrWrongCode)
	assert.ErrorIs(t, svc.VerifyCode(ctx, notify.VerifyCodeRequest{Email: "bob@example.com", Code: code}), notify.ErrWrongCode, "no code was sent to bob")
	assert.NoError(t, svc.VerifyCode(ctx, notify.VerifyCodeRequest{Email: "ALICE@example.com", Code: code}))
	assert.ErrorIs(t, svc.VerifyCode(ctx, notify.VerifyCodeRequest{Email: "alice@example.com", Code: code}), notify.ErrWrongCode, "a code is single-use")

	assert.ErrorIs(t, svc.SendCode(ctx, notify.SendCodeRequest{Email: "not an address"}), notify.ErrInvalidRequest)
	assert.Len(t, box.sent, 1, "an invalid request sends nothing")
}

// The generated wrapper enforces the directives on CodeService: the fourth
// code within a minute for one mailbox, however it is spelt, is refused
// with a *runtime.LimitError and never reaches the service.
func TestRateLimitedCodeService(t *testing.T) {
	ctx := context.Background()
	box := &mailbox{}
	codes := notify.NewRateLimitedCodeService(notify.NewService(box), memlimit.New())

	for _, email := range []string{"alice@example.com", "Alice@example.com", " ALICE@EXAMPLE.COM"} {
		require.NoError(t, codes.SendCode(ctx, notify.SendCodeRequest{Email: email}))
	}
	err := codes.SendCode(ctx, notify.SendCodeRequest{Email: "alice@example.com"})
	var le *runtime.LimitError
	require.True(t, errors.As(err, &le), "got %v", err)
	assert.Equal(t, runtime.Limit{Name: "CodeService.SendCode", Window: 60e9, Max: 3}, le.Limit)
	assert.Len(t, box.sent, 3, "a denied call must not reach the service")
	assert.NoError(t, codes.SendCode(ctx, notify.SendCodeRequest{Email: "bob@example.com"}))

	// VerifyCode counts every attempt, wrong or right.
	for range 5 {
		err := codes.VerifyCode(ctx, notify.VerifyCodeRequest{Email: "bob@example.com", Code: "wrong"})
		require.ErrorIs(t, err, notify.ErrWrongCode)
	}
	err = codes.VerifyCode(ctx, notify.VerifyCodeRequest{Email: "bob@example.com", Code: box.sent[3].code})
	require.True(t, errors.As(err, &le), "got %v", err)
	assert.Equal(t, "CodeService.VerifyCode", le.Limit.Name)
	assert.Equal(t, 5, le.Limit.Max)
}
